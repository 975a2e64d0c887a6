// float16 tensors as float32 numbers. Half-precision exports (model_fp16.onnx) return their
// hidden states, logits and caches as float16: ONNX Runtime hands them to JS as raw IEEE half
// bits in a Uint16Array (our binding, older runtimes) or as a Float16Array (onnxruntime-common
// where the platform has one). Past this file every pipeline sees float32.
import { InferenceError } from '../errors.ts';
import type { Tensor } from './tensor.ts';

/**
 * How far a float16 encoder's pooled, normalized embeddings may be from its float32 model's: the
 * tolerance test/parity/fp16-parity.test.ts holds MiniLM's model_fp16.onnx to on CPU, and the
 * device bench (bench/lib/device-bench.ts) its GPU outputs. Measured when set, over 300 corpus
 * texts: worst cosine 0.9999986, worst component 3.1e-4.
 */
export const FP16_TOLERANCE = { cosine: 0.99999, maxAbs: 1e-3 } as const;

/** A float tensor's values as float32, whichever float type the model produced. */
export function floatData(tensor: Tensor, name: string): Float32Array {
  if (tensor.type === 'float32') return tensor.data as Float32Array;
  if (tensor.type === 'float16') {
    const data = tensor.data as unknown;
    if (data instanceof Uint16Array) return halfBitsToFloat32(data);
    if (ArrayBuffer.isView(data) && data.byteLength === tensor.size * 2)
      return halfBitsToFloat32(new Uint16Array(data.buffer, data.byteOffset, tensor.size));
  }
  throw new InferenceError(`output '${name}' is ${tensor.type}, expected float32 or float16`);
}

let table: Float32Array | undefined;

/**
 * Decodes through a table of all 65,536 half values (256 KiB, built once): a pooled hidden
 * state of 32 × 256 × 384 halves is 3 M lookups, against 3 M calls of `**` computed per value.
 */
export function halfBitsToFloat32(bits: Uint16Array): Float32Array {
  table ??= halfTable();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i += 1) out[i] = table[bits[i] as number] as number;
  return out;
}

function halfTable(): Float32Array {
  const values = new Float32Array(1 << 16);
  for (let h = 0; h < values.length; h += 1) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    if (exponent === 0) values[h] = sign * 2 ** -14 * (fraction / 1024);
    else if (exponent === 0x1f) values[h] = fraction === 0 ? sign * Infinity : NaN;
    else values[h] = sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
  }
  return values;
}
