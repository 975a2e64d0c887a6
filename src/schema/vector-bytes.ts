// A compact vector (route `output.vectors`) on its way to a schema output: its raw bytes, kept
// until the output's format is known, because each format holds them its own way. Avro and
// Protobuf have a `bytes` type, so the bytes go in as they are (a quarter of the base64 text's
// size less than JSON's, and no decoding step for the reader); JSON Schema has none, so there the
// vector stays what the route's JSON output writes: base64 text, or the int8 values as numbers.
import type { RegistrySchema } from './registry-client.ts';

export class VectorBytes {
  readonly bytes: Uint8Array;
  /** The int8 values (two's complement, one a byte) rather than bytes to be read as they are. */
  readonly signed: boolean;

  constructor(bytes: Uint8Array, signed: boolean) {
    this.bytes = bytes;
    this.signed = signed;
  }

  /** As a JSON record holds it: base64 text, or the int8 values as numbers. */
  json(): string | number[] {
    if (this.signed)
      return Array.from(new Int8Array(this.bytes.buffer, this.bytes.byteOffset, this.bytes.length));
    return this.buffer().toString('base64');
  }

  buffer(): Buffer {
    return Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }
}

/**
 * The value with each VectorBytes in the form `schemaType` holds: a Buffer (an Avro or Protobuf
 * `bytes`; for JSON Schema, written as base64), or, for int8 in JSON Schema, the numbers. Only
 * plain objects and arrays are looked into: a decoded input's own values are left as they are.
 */
export function vectorsFor(value: unknown, schemaType: RegistrySchema['schemaType']): unknown {
  if (value instanceof VectorBytes)
    return schemaType === 'JSON' && value.signed ? value.json() : value.buffer();
  if (Array.isArray(value)) return value.map((v) => vectorsFor(v, schemaType));
  if (value !== null && typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return value;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, vectorsFor(v, schemaType)]),
    );
  }
  return value;
}
