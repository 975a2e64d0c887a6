// A native session's declared inputs and outputs (names, element types, shapes with their
// symbolic dimensions), read once when it opens.
import { ModelFolderError } from '../../errors.ts';
import type { ValueMetadata } from '../session.ts';
import { readCString, type OrtLibrary, type Pointer } from './ort-library.ts';
import { ONNX_TYPE_TENSOR, elementTypeName } from './ort-value.ts';

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
