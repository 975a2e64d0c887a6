// The Confluent wire format around an Avro, Protobuf or JSON Schema payload: magic byte 0, the
// schema id (4 bytes, big-endian), for Protobuf the message indexes (which message of the schema
// file, as a path through nested types), then the payload. Only the framing is here; the payload
// is the codec libraries' (avsc, protobufjs, JSON).
import { SchemaDecodeError } from '../errors.ts';

const MAGIC = 0;
const HEADER_BYTES = 5;

export interface Framed {
  schemaId: number;
  /** Protobuf only: the message's path through the file's message types; [0] is the first. */
  messageIndexes?: number[];
  payload: Buffer;
}

/** Splits a record into its schema id (and Protobuf message indexes) and payload. */
export function unframe(bytes: Buffer, protobuf: boolean): Framed {
  if (bytes.length < HEADER_BYTES || bytes[0] !== MAGIC)
    throw new SchemaDecodeError(
      bytes.length === 0
        ? 'the record is empty, not the Confluent wire format (magic byte 0 and a schema id)'
        : `the record is not in the Confluent wire format: it starts with byte ${bytes[0]} and is ${bytes.length} bytes (a Schema Registry record starts with byte 0 and a 4-byte schema id)`,
    );
  const schemaId = bytes.readUInt32BE(1);
  if (!protobuf) return { schemaId, payload: bytes.subarray(HEADER_BYTES) };
  const reader = { bytes, at: HEADER_BYTES };
  const count = readZigzag(reader);
  // Confluent's shortcut: a lone 0 stands for [0], the first message, the common case.
  const messageIndexes = count === 0 ? [0] : [];
  for (let i = 0; i < count; i += 1) messageIndexes.push(readZigzag(reader));
  return { schemaId, messageIndexes, payload: bytes.subarray(reader.at) };
}

/** The record bytes for a payload written with `schemaId` (and, Protobuf, its message indexes). */
export function frame(schemaId: number, payload: Uint8Array, messageIndexes?: number[]): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header[0] = MAGIC;
  header.writeUInt32BE(schemaId, 1);
  if (messageIndexes === undefined) return Buffer.concat([header, payload]);
  const indexes =
    messageIndexes.length === 1 && messageIndexes[0] === 0
      ? [0]
      : [messageIndexes.length, ...messageIndexes];
  return Buffer.concat([header, Buffer.from(indexes.flatMap(zigzagBytes)), payload]);
}

interface Reader {
  bytes: Buffer;
  at: number;
}

/** A zigzag varint (Protobuf's sint32), as the Java serializer writes the message indexes. */
function readZigzag(reader: Reader): number {
  let value = 0;
  for (let shift = 0; shift < 35; shift += 7) {
    const byte = reader.bytes[reader.at];
    if (byte === undefined)
      throw new SchemaDecodeError(
        'the record ends inside its Protobuf message indexes (the Confluent wire format)',
      );
    reader.at += 1;
    value |= (byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) {
      const decoded = (value >>> 1) ^ -(value & 1);
      if (decoded < 0 || decoded > 10_000)
        throw new SchemaDecodeError(
          `the record's Protobuf message indexes hold ${decoded}, not a message index`,
        );
      return decoded;
    }
  }
  throw new SchemaDecodeError('the record has an overlong varint in its Protobuf message indexes');
}

function zigzagBytes(value: number): number[] {
  let zigzag = ((value << 1) ^ (value >> 31)) >>> 0;
  const out: number[] = [];
  while (zigzag > 0x7f) {
    out.push((zigzag & 0x7f) | 0x80);
    zigzag >>>= 7;
  }
  out.push(zigzag);
  return out;
}
