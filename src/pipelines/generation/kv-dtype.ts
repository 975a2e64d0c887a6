// The one place that knows how cache tensors are stored. Exports keep the KV cache in float32 or,
// for half-precision models, float16; everything past this file sees opaque tensors (logits are
// read as float32 through src/runtime/half-float.ts).
import { Tensor } from '../../runtime/tensor.ts';
import { isResident, type ResidentTensor } from '../../runtime/session.ts';
import { InferenceError, ModelFolderError } from '../../errors.ts';

/**
 * A cache tensor: in JS memory, or resident where the session made it (the decode batch's cache
 * on a GPU between steps; kv-cache.ts's runStep with `resident`).
 */
export type KvTensor = Tensor | ResidentTensor;

export type KvDataType = 'float32' | 'float16';

export function asKvDataType(type: string, name: string): KvDataType {
  if (type === 'float32' || type === 'float16') return type;
  throw new ModelFolderError(
    `cache input '${name}' is ${type}; only float32 and float16 caches are supported`,
    { field: name },
  );
}

/** An all-empty (or zero-filled) tensor of the cache's type. */
export function zerosTensor(type: KvDataType, dims: readonly number[]): Tensor {
  const size = dims.reduce((a, b) => a * b, 1);
  // ONNX Runtime takes float16 as raw IEEE half bits in a Uint16Array; zero bits are +0.0.
  return type === 'float32'
    ? new Tensor('float32', new Float32Array(size), dims)
    : new Tensor('float16', new Uint16Array(size), dims);
}

/** A cache tensor's storage: float32 values, or float16 as raw half bits. */
export type CacheArray = Float32Array | Uint16Array;

/**
 * A cache tensor's elements as they are stored in JS memory, for copying columns between caches
 * without converting them (a resident one is copied to the host first, once). Runtimes with
 * Float16Array hand half caches back as one; their bits copy the same way.
 */
export function cacheBits(cache: KvTensor | undefined, name: string): CacheArray {
  const tensor = isResident(cache) ? cache.toHost() : cache;
  const data = tensor?.data;
  if (data instanceof Float32Array || data instanceof Uint16Array) return data;
  if (ArrayBuffer.isView(data) && tensor?.type === 'float16')
    return new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
  throw new InferenceError(`cache tensor '${name}' is not a CPU float32/float16 tensor`);
}

/** Zeroed storage for `size` cache elements of the given type. */
export function allocateCache(type: KvDataType, size: number): CacheArray {
  return type === 'float32' ? new Float32Array(size) : new Uint16Array(size);
}
