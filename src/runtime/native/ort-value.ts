// Tensors across the C API: a JS tensor becomes an OrtValue over the tensor's own memory (no copy;
// ONNX Runtime reads it during the Run that the value is made for), and an output OrtValue becomes
// a JS tensor holding a copy, so that the native value can be freed at once.
import koffi from 'koffi';
import { FeedMismatchError } from '../../errors.ts';
import { Tensor } from '../tensor.ts';
import type { OrtLibrary, Pointer } from './ort-library.ts';
import type { OutputScratch } from '../output-scratch.ts';

/** ONNXTensorElementDataType values by onnxruntime-common's type names. */
export const ELEMENT_TYPES = {
  float32: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  string: 8,
  bool: 9,
  float16: 10,
  float64: 11,
  uint32: 12,
  uint64: 13,
} as const satisfies Partial<Record<Tensor.Type, number>>;

export type ElementType = keyof typeof ELEMENT_TYPES;

/** A new, zeroed typed array of `count` elements for each numeric type. */
const ARRAYS: Record<Exclude<ElementType, 'string'>, (count: number) => Tensor.DataType> = {
  float32: (n) => new Float32Array(n),
  uint8: (n) => new Uint8Array(n),
  int8: (n) => new Int8Array(n),
  uint16: (n) => new Uint16Array(n),
  int16: (n) => new Int16Array(n),
  int32: (n) => new Int32Array(n),
  int64: (n) => new BigInt64Array(n),
  bool: (n) => new Uint8Array(n),
  // onnxruntime-node hands float16 out as raw half bits; so do we.
  float16: (n) => new Uint16Array(n),
  float64: (n) => new Float64Array(n),
  uint32: (n) => new Uint32Array(n),
  uint64: (n) => new BigUint64Array(n),
};

const TYPE_NAMES = new Map<number, ElementType>(
  Object.entries(ELEMENT_TYPES).map(([name, value]) => [value, name as ElementType]),
);

export function elementTypeName(value: number): ElementType | undefined {
  return TYPE_NAMES.get(value);
}

export const ONNX_TYPE_TENSOR = 1;

/** Memory the C API reads from or writes to, kept alive by the JS value it came from. */
function dataOf(tensor: Tensor): ArrayBufferView {
  const data = tensor.data as unknown;
  if (!ArrayBuffer.isView(data))
    throw new FeedMismatchError(`a ${tensor.type} tensor's data is not a typed array`);
  // Touching .buffer moves a small typed array's bytes off V8's heap, where the GC never moves them.
  void data.buffer;
  return data;
}

/**
 * An OrtValue for `tensor`. Numeric tensors point at the tensor's own memory, which must outlive
 * the value (the caller releases the value before returning the tensor to JS). `name` is for errors.
 */
export function createInputValue(
  lib: OrtLibrary,
  cpuMemory: Pointer,
  allocator: Pointer,
  tensor: Tensor,
  name: string,
): Pointer {
  const type = tensor.type as ElementType;
  const code = ELEMENT_TYPES[type] as number | undefined;
  if (code === undefined)
    throw new FeedMismatchError(
      `input '${name}' is ${tensor.type}, which the native binding does not take`,
      {
        field: name,
      },
    );
  const shape = BigInt64Array.from(tensor.dims, (d) => BigInt(d));
  if (type === 'string') return createStringValue(lib, allocator, tensor, shape, name);
  const data = dataOf(tensor);
  return lib.out(
    'CreateTensorWithDataAsOrtValue',
    cpuMemory,
    data.byteLength === 0 ? EMPTY : data,
    data.byteLength,
    shape,
    shape.length,
    code,
  );
}

// ONNX Runtime refuses a null data pointer even for a tensor with no elements.
const EMPTY = new Uint8Array(8);

function createStringValue(
  lib: OrtLibrary,
  allocator: Pointer,
  tensor: Tensor,
  shape: BigInt64Array,
  name: string,
): Pointer {
  const strings = tensor.data as unknown;
  if (!Array.isArray(strings) || !strings.every((s) => typeof s === 'string'))
    throw new FeedMismatchError(`string input '${name}' does not hold strings`, { field: name });
  const value = lib.out(
    'CreateTensorAsOrtValue',
    allocator,
    shape,
    shape.length,
    ELEMENT_TYPES.string,
  );
  try {
    const { pointers } = cStrings(strings);
    lib.call('FillStringTensor', value, pointers, strings.length);
  } catch (err) {
    lib.fn('ReleaseValue')(value);
    throw err;
  }
  return value;
}

/**
 * NUL-terminated copies of `strings` in one buffer and a table of pointers into it. The buffer is
 * referenced from the returned object, so it lives as long as the caller holds that.
 */
export function cStrings(strings: readonly string[]): { pointers: BigUint64Array; bytes: Buffer } {
  const parts = strings.map((s) => Buffer.from(`${s}\0`, 'utf8'));
  const bytes = Buffer.concat(parts.length === 0 ? [Buffer.alloc(1)] : parts);
  const base = koffi.address(bytes);
  const pointers = new BigUint64Array(strings.length);
  let offset = 0;
  parts.forEach((part, i) => {
    pointers[i] = base + BigInt(offset);
    offset += part.length;
  });
  return { pointers, bytes };
}

/** An output OrtValue's element type, dimensions and element count, without reading its data. */
export function valueShape(
  lib: OrtLibrary,
  value: Pointer,
  name: string,
): { type: ElementType; dims: number[]; count: number } {
  const kind = lib.outInt('GetValueType', value);
  if (kind !== ONNX_TYPE_TENSOR)
    throw new FeedMismatchError(
      `output '${name}' is not a tensor (ONNX type ${kind}); the native binding reads tensors only`,
      { field: name },
    );
  const info = lib.out('GetTensorTypeAndShape', value);
  let code: number;
  let dims: number[];
  let count: number;
  try {
    code = lib.outInt('GetTensorElementType', info);
    const rank = lib.outSize('GetDimensionsCount', info);
    const raw = new BigInt64Array(rank);
    if (rank > 0) lib.call('GetDimensions', info, raw, rank);
    dims = Array.from(raw, Number);
    count = lib.outSize('GetTensorShapeElementCount', info);
  } finally {
    lib.fn('ReleaseTensorTypeAndShapeInfo')(info);
  }
  const type = elementTypeName(code);
  if (type === undefined)
    throw new FeedMismatchError(
      `output '${name}' has element type ${code}, which the native binding does not read`,
      {
        field: name,
      },
    );
  return { type, dims, count };
}

/**
 * A JS tensor with a copy of an output OrtValue's contents, which must be in CPU memory. The value
 * is not released here.
 */
export function readOutputValue(
  lib: OrtLibrary,
  value: Pointer,
  name: string,
  scratch?: OutputScratch,
): Tensor {
  const { type, dims, count } = valueShape(lib, value, name);
  if (type === 'string') return new Tensor('string', readStrings(lib, value, count), dims);
  // A copy, so that the OrtValue can be freed at once (ort-library.ts's copy says why not a view).
  const data =
    scratch !== undefined && type === 'float32' ? scratch.take(count) : ARRAYS[type](count);
  if (count > 0) lib.copy(lib.out('GetTensorMutableData', value), data as ArrayBufferView);
  return new Tensor(type, data, dims);
}

function readStrings(lib: OrtLibrary, value: Pointer, count: number): string[] {
  if (count === 0) return [];
  const total = lib.outSize('GetStringTensorDataLength', value);
  const bytes = Buffer.alloc(Math.max(total, 1));
  const offsets = new BigUint64Array(count);
  lib.call('GetStringTensorContent', value, bytes, total, offsets, count);
  const out: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const start = Number(offsets[i]);
    const end = i + 1 < count ? Number(offsets[i + 1]) : total;
    out.push(bytes.toString('utf8', start, end));
  }
  return out;
}
