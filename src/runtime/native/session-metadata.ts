// A native session's declared inputs and outputs (names, element types, shapes with their
// symbolic dimensions), read once when it opens, and the check of a feed against them that runs
// before any native call.
import { ModelFolderError } from '../../errors.ts';
import type { ValueMetadata } from '../session.ts';
import type { Tensor } from '../tensor.ts';
import { readCString, type OrtLibrary, type Pointer } from './ort-library.ts';
import { ONNX_TYPE_TENSOR, elementTypeName } from './ort-value.ts';

export function checkTensor(
  meta: ValueMetadata,
  tensor: { type: Tensor.Type; dims: readonly number[] },
  fail: (why: string) => Error,
): void {
  if (!meta.isTensor) throw fail('is not a tensor input; the native binding feeds tensors only');
  const expected = meta;
  if (tensor.type !== expected.type)
    throw fail(`is ${tensor.type}, the model takes ${expected.type}`);
  if (expected.shape.length === 0) return;
  if (tensor.dims.length !== expected.shape.length)
    throw fail(
      `has ${tensor.dims.length} dimensions [${tensor.dims.join(', ')}], the model takes ${expected.shape.length} [${expected.shape.join(', ')}]`,
    );
  expected.shape.forEach((dim, i) => {
    if (typeof dim === 'number' && dim >= 0 && tensor.dims[i] !== dim)
      throw fail(
        `has dimension ${i} = ${tensor.dims[i]}, the model takes ${dim} ([${expected.shape.join(', ')}])`,
      );
  });
}

export function describe(
  lib: OrtLibrary,
  session: Pointer,
  allocator: Pointer,
  side: 'Input' | 'Output',
  names: Pointer[],
): { pointer: Pointer; meta: ValueMetadata }[] {
  const count = lib.outSize(`SessionGet${side}Count`, session);
  const values: { pointer: Pointer; meta: ValueMetadata }[] = [];
  for (let i = 0; i < count; i += 1) {
    const pointer = lib.out(`SessionGet${side}Name`, session, i, allocator);
    names.push(pointer);
    const name = readCString(pointer);
    const typeInfo = lib.out(`SessionGet${side}TypeInfo`, session, i);
    try {
      values.push({ pointer, meta: metadataOf(lib, name, typeInfo) });
    } finally {
      lib.fn('ReleaseTypeInfo')(typeInfo);
    }
  }
  return values;
}

function metadataOf(lib: OrtLibrary, name: string, typeInfo: Pointer): ValueMetadata {
  if (lib.outInt('GetOnnxTypeFromTypeInfo', typeInfo) !== ONNX_TYPE_TENSOR)
    return { name, isTensor: false };
  // Owned by typeInfo: not released on its own.
  const info = lib.out('CastTypeInfoToTensorInfo', typeInfo);
  const code = lib.outInt('GetTensorElementType', info);
  const type = elementTypeName(code);
  if (type === undefined)
    throw new ModelFolderError(
      `tensor '${name}' has element type ${code}, which the native binding does not handle`,
      {
        field: 'runtime.binding',
      },
    );
  const rank = lib.outSize('GetDimensionsCount', info);
  const dims = new BigInt64Array(rank);
  const symbols = new BigUint64Array(rank);
  if (rank > 0) {
    lib.call('GetDimensions', info, dims, rank);
    lib.call('GetSymbolicDimensions', info, symbols, rank);
  }
  const shape = Array.from(dims, (d, i) => {
    if (d >= 0n) return Number(d);
    const symbol = symbols[i] as bigint;
    return symbol === 0n ? '' : readCString(symbol);
  });
  return { name, isTensor: true, type, shape };
}

export function freeNames(lib: OrtLibrary, allocator: Pointer, names: Pointer[]): void {
  const free = lib.fn('AllocatorFree');
  for (const name of names.splice(0)) free(allocator, name);
}
