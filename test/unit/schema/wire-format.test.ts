import { AvroSerializer, SerdeType } from '@confluentinc/schemaregistry';
import { describe, expect, it } from 'vitest';
import { SchemaDecodeError } from '../../../src/errors.ts';
import { frame, unframe } from '../../../src/schema/wire-format.ts';
import { FakeRegistry } from './fake-registry.ts';

describe('Confluent wire format', () => {
  it("reads the schema id and payload of bytes Confluent's own serializer wrote", async () => {
    const registry = new FakeRegistry();
    const schema = JSON.stringify({
      type: 'record',
      name: 'Doc',
      fields: [{ name: 'text', type: 'string' }],
    });
    const id = await registry.client.register('in-value', { schemaType: 'AVRO', schema });
    const serializer = new AvroSerializer(registry.client, SerdeType.VALUE, {
      useLatestVersion: true,
    });
    const bytes = await serializer.serialize('in', { text: 'hello' });
    const framed = unframe(bytes, false);
    expect(framed.schemaId).toBe(id);
    // Avro: a string is its zigzag length then its UTF-8 bytes.
    expect(framed.payload).toEqual(Buffer.concat([Buffer.from([10]), Buffer.from('hello')]));
    expect(frame(id, framed.payload)).toEqual(bytes);
  });

  it('writes Protobuf message indexes as Confluent does: [0] as one 0 byte, others counted', () => {
    expect(frame(3, Buffer.from([1]), [0])).toEqual(Buffer.from([0, 0, 0, 0, 3, 0, 1]));
    // [1]: count 1 and index 1, each a zigzag varint (2).
    expect(frame(3, Buffer.from([1]), [1])).toEqual(Buffer.from([0, 0, 0, 0, 3, 2, 2, 1]));
    for (const indexes of [[0], [1], [2, 0, 70]]) {
      const framed = unframe(frame(300, Buffer.from([9, 9]), indexes), true);
      expect(framed).toEqual({
        schemaId: 300,
        messageIndexes: indexes,
        payload: Buffer.from([9, 9]),
      });
    }
  });

  it('refuses bytes that are not the wire format, saying what they start with', () => {
    expect(() => unframe(Buffer.from('{"text":"hi"}'), false)).toThrow(SchemaDecodeError);
    expect(() => unframe(Buffer.from('{"text":"hi"}'), false)).toThrow(/starts with byte 123/);
    expect(() => unframe(Buffer.alloc(0), false)).toThrow(/empty/);
    expect(() => unframe(Buffer.from([0, 0, 0, 0, 1, 0x80]), true)).toThrow(/message indexes/);
  });
});
