// A JSON Schema output is checked against the writer's schema before it is written: a given
// {subject, version} that the output does not fit refuses it (SCHEMA_REFUSED), naming where.
import { describe, expect, it } from 'vitest';
import { SchemaRefusedError } from '../../../src/errors.ts';
import { codecFor } from '../../../src/schema/schema-codec.ts';

const schema = JSON.stringify({
  title: 'Enriched',
  type: 'object',
  properties: {
    text: { type: 'string' },
    embedding: { type: 'array', items: { type: 'number' } },
    when: { type: 'string', format: 'date-time' },
  },
  required: ['text', 'embedding'],
});
const codec = codecFor({
  schema: { schemaType: 'JSON', schema, references: [] },
  references: [],
  referenceNames: [],
});

describe('JSON Schema codec', () => {
  it('writes an output that fits, as JSON text, and reads it back', () => {
    const value = { text: 'hi', embedding: [0.5, -1], when: 'not checked as a format' };
    const bytes = codec.encode(value);
    expect(JSON.parse(bytes.toString('utf8'))).toEqual(value);
    expect(codec.decode(bytes)).toEqual(value);
    expect(codec.recordName()).toBe('Enriched');
  });

  it('refuses an output the schema does not take, naming the field', () => {
    expect(() => codec.encode({ text: 'hi', embedding: ['x'] })).toThrow(SchemaRefusedError);
    expect(() => codec.encode({ text: 'hi', embedding: ['x'] })).toThrow(
      /\/embedding\/0 must be number/,
    );
    expect(() => codec.encode({ embedding: [1] })).toThrow(/must have required property 'text'/);
  });

  it('checks compact vectors as the consumer reads them: bytes as base64 text', () => {
    const bytesSchema = codecFor({
      schema: {
        schemaType: 'JSON',
        schema: JSON.stringify({
          type: 'object',
          properties: { v: { type: 'string', contentEncoding: 'base64' } },
        }),
        references: [],
      },
      references: [],
      referenceNames: [],
    });
    const out = bytesSchema.encode({ v: Buffer.from([1, 2, 3]) });
    expect(JSON.parse(out.toString('utf8'))).toEqual({ v: 'AQID' });
  });
});
