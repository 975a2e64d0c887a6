// Compact vectors for embedding outputs (route `output.vectors`, docs/pipelines.md#compact-vectors).
// A float vector is cut to its first N values (Matryoshka) and written in one of the forms the
// embedding servers offer: JSON numbers, base64 of float32 or float16 bytes, int8 with a scale, or
// packed sign bits. Pure functions on one vector, so that any writer of a vector (the JSON output
// here, an Avro or Protobuf `bytes` field) encodes it the same way.
//
// API:
//   encodeVector(vector, { encoding, dimensions? }) -> { json, bytes }
//     json:  the value a JSON record holds (number[], a base64 string, or {int8, scale});
//     bytes: the same vector as raw bytes, for a `bytes` field: float32 LE (json and base64-f32),
//            float16 LE (base64-f16), the int8 values alone, one per byte (int8: the scale is
//            json.scale), or the packed sign bits (binary).
//   truncateVector(vector, dimensions) -> the first `dimensions` values, renormalised when the
//     vector was unit length.
//   A `dimensions` at or over the vector's length keeps it whole: a route refuses that at start-up
//   (src/config/vector-output.ts) or per record (src/route/vector-output.ts).
import type { RouteConfig } from '../config/schema.ts';
import { l2Normalize } from '../pipelines/runtime/math.ts';

export type VectorOptions = NonNullable<RouteConfig['output']['vectors']>;
export type VectorEncoding = VectorOptions['encoding'];

/** A vector in the form a JSON record holds and as raw bytes. */
export interface EncodedVector {
  json: unknown;
  bytes: Uint8Array;
}

/** The int8 form in JSON: value[i] ≈ int8[i] * scale. */
export interface Int8Vector {
  int8: number[];
  scale: number;
}

/**
 * A vector counts as normalised when its length is this close to 1: a float32 L2-normalised
 * vector is within about 1e-6, a pooled hidden state that was not normalised is nowhere near.
 */
const UNIT_TOLERANCE = 1e-3;

export function encodeVector(vector: Float32Array, options: VectorOptions): EncodedVector {
  const v = options.dimensions === undefined ? vector : truncateVector(vector, options.dimensions);
  switch (options.encoding) {
    case 'json':
      return { json: Array.from(v), bytes: float32Bytes(v) };
    case 'base64-f32': {
      const bytes = float32Bytes(v);
      return { json: base64(bytes), bytes };
    }
    case 'base64-f16': {
      const bytes = float16Bytes(v);
      return { json: base64(bytes), bytes };
    }
    case 'int8': {
      const { int8, scale } = int8Vector(v);
      return { json: { int8: Array.from(int8), scale } satisfies Int8Vector, bytes: asBytes(int8) };
    }
    case 'binary': {
      const bytes = signBits(v);
      return { json: base64(bytes), bytes };
    }
  }
}

/**
 * The first `dimensions` values (Matryoshka truncation). A unit-length vector (the pipeline
 * normalises: options.normalize, or the folder's Normalize module) is L2-renormalised after the
 * cut, as sentence-transformers' truncate_dim with normalize_embeddings and TEI's `dimensions`
 * give it; any other vector is cut and left as it is, so its values keep their meaning.
 */
export function truncateVector(vector: Float32Array, dimensions: number): Float32Array {
  if (dimensions >= vector.length) return vector;
  const kept = vector.slice(0, dimensions);
  // The pipeline's own normalisation, so a cut vector is normalised as a whole one is.
  return Math.abs(norm(vector) - 1) > UNIT_TOLERANCE ? kept : l2Normalize(kept);
}

function norm(v: Float32Array): number {
  let sum = 0;
  for (const x of v) sum += x * x;
  return Math.sqrt(sum);
}

/** IEEE float32, little-endian, as numpy's `v.astype('<f4').tobytes()`. */
function float32Bytes(v: Float32Array): Uint8Array {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  v.forEach((x, i) => view.setFloat32(i * 4, x, true));
  return bytes;
}

// DataView.setFloat16 (ES2025, in Node 24) rounds to nearest, ties to even, as numpy's
// astype(float16) does; the TypeScript lib this project targets does not declare it yet.
type Float16View = DataView & { setFloat16(offset: number, value: number, le: boolean): void };

/** IEEE half precision, little-endian, rounded to nearest even (numpy's `astype('<f2')`). */
function float16Bytes(v: Float32Array): Uint8Array {
  const bytes = new Uint8Array(v.length * 2);
  const view = new DataView(bytes.buffer) as Float16View;
  v.forEach((x, i) => view.setFloat16(i * 2, x, true));
  return bytes;
}

/**
 * Symmetric per-vector scaling: scale = max|v| / 127 and int8[i] = round(v[i] / scale), rounded
 * half to even, so the largest value maps to ±127 and v[i] ≈ int8[i] * scale within scale / 2. A
 * zero vector has scale 0 and zeros. Cosine similarity of the int8 values needs no scale.
 */
function int8Vector(v: Float32Array): { int8: Int8Array; scale: number } {
  let max = 0;
  for (const x of v) max = Math.max(max, Math.abs(x));
  const int8 = new Int8Array(v.length);
  if (max === 0) return { int8, scale: 0 };
  v.forEach((x, i) => {
    int8[i] = roundHalfEven((x * 127) / max);
  });
  return { int8, scale: max / 127 };
}

function roundHalfEven(x: number): number {
  const floor = Math.floor(x);
  const diff = x - floor;
  if (diff !== 0.5) return Math.round(x);
  return floor % 2 === 0 ? floor : floor + 1;
}

/**
 * One bit per value, 1 where it is > 0, packed most significant bit first and the last byte padded
 * with zeros: numpy's `np.packbits(v > 0)`, sentence-transformers' `ubinary`.
 */
function signBits(v: Float32Array): Uint8Array {
  const bytes = new Uint8Array(Math.ceil(v.length / 8));
  v.forEach((x, i) => {
    if (x > 0) bytes[i >> 3] = (bytes[i >> 3] as number) | (0x80 >> (i & 7));
  });
  return bytes;
}

const asBytes = (int8: Int8Array): Uint8Array =>
  new Uint8Array(int8.buffer, int8.byteOffset, int8.byteLength);

const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
