// A route's `output.vectors` applied to a result: every vector in it (a pooled embedding, or each
// token's) encoded as vector-encoding.ts says, and headers that tell a consumer how to decode. It
// runs on the main thread, after the output keys are shaped: the vector came back from the
// inference thread anyway, and encoding a few hundred floats costs microseconds, far less than the
// copy of a batch between threads, so an inference thread is kept for inference.
//
// With `bytes` (a route written with a schema, output.schema or a schema input format), a vector
// whose encoding is bytes (base64-f32, base64-f16, binary; int8's values) is kept as its raw bytes
// (VectorBytes), so that an Avro or Protobuf output holds a real `bytes` field rather than base64
// text; the output's format settles the form (src/schema/vector-bytes.ts).
import { VectorBytes } from '../schema/vector-bytes.ts';
import { encodeVector, type Int8Vector, type VectorOptions } from './vector-encoding.ts';
import type { Headers } from './record.ts';

/** Names the encoding of the record's vectors, e.g. `base64-f16`. */
export const VECTOR_ENCODING_HEADER = 'x-hugot-vector-encoding';
/** The values in each vector after `dimensions`, e.g. `128`. */
export const VECTOR_DIMENSIONS_HEADER = 'x-hugot-vector-dimensions';

/** A vector with fewer values than `output.vectors.dimensions` asks to keep. */
export class VectorTooShortError extends Error {
  override name = 'VectorTooShortError';
}

export interface EncodedVectors {
  result: unknown;
  /** Headers for the output record; none without output.vectors. */
  headers: Headers;
}

export type VectorShaper = (result: unknown) => EncodedVectors;

export function vectorShaper(
  vectors: VectorOptions | undefined,
  { bytes = false }: { bytes?: boolean } = {},
): VectorShaper {
  if (vectors === undefined) return (result) => ({ result, headers: {} });
  return (result) => {
    let length: number | undefined;
    const encode = (value: unknown): unknown => {
      if (value instanceof Float32Array) {
        if (vectors.dimensions !== undefined && value.length < vectors.dimensions)
          throw new VectorTooShortError(
            `the pipeline's vector has ${value.length} values, fewer than output.vectors.dimensions (${vectors.dimensions}); set dimensions to ${value.length} or fewer`,
          );
        length = Math.min(value.length, vectors.dimensions ?? value.length);
        const encoded = encodeVector(value, vectors);
        if (!bytes || vectors.encoding === 'json') return encoded.json;
        if (vectors.encoding !== 'int8') return new VectorBytes(encoded.bytes, false);
        return {
          int8: new VectorBytes(encoded.bytes, true),
          scale: (encoded.json as Int8Vector).scale,
        };
      }
      if (Array.isArray(value)) return value.map(encode);
      if (
        value !== null &&
        typeof value === 'object' &&
        !ArrayBuffer.isView(value) &&
        !(value instanceof VectorBytes)
      )
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, encode(v)]));
      return value;
    };
    const encoded = encode(result);
    const headers: Headers = { [VECTOR_ENCODING_HEADER]: vectors.encoding };
    if (length !== undefined) headers[VECTOR_DIMENSIONS_HEADER] = String(length);
    return { result: encoded, headers };
  };
}
