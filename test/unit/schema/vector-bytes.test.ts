// Compact vectors (output.vectors) in schema outputs: a bytes encoding is a real `bytes` field in
// Avro and Protobuf and base64 text in JSON Schema; int8 is a record of its values as bytes and
// the scale. End to end through the processor, read back with Confluent's deserializers (Avro,
// JSON Schema) and with protobufjs on the derived .proto, and decoded to the vector again.
import {
  AvroDeserializer,
  AvroSerializer,
  JsonDeserializer,
  SerdeType,
} from '@confluentinc/schemaregistry';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { silentLogger } from '../../../src/logger.ts';
import { RecordProcessor, type Submit } from '../../../src/route/processor.ts';
import type { SourceRecord } from '../../../src/route/record.ts';
import { RegistryConnection } from '../../../src/schema/registry-connection.ts';
import { RouteSchemas } from '../../../src/schema/route-schemas.ts';
import { frame, unframe } from '../../../src/schema/wire-format.ts';
import { FakeRegistry } from './fake-registry.ts';

/** Values no short float is exact for, so each encoding's rounding shows. */
const VECTOR = new Float32Array([0.1, -0.3, 0.7, 0.05, -0.9, 0.2, 0.33, -0.01, 0.6]);
const embed: Submit = () => Promise.resolve(VECTOR.slice());

const DOC = {
  type: 'record',
  name: 'Doc',
  namespace: 'example',
  fields: [{ name: 'text', type: 'string' }],
};
const PROTO = `syntax = "proto3";\npackage example;\nmessage Doc {\n  string text = 1;\n}\n`;
const JSON_DOC = { title: 'Doc', type: 'object', properties: { text: { type: 'string' } } };

type Format = 'avro' | 'protobuf' | 'json-schema' | 'json';
type Encoding = 'json' | 'base64-f32' | 'base64-f16' | 'int8' | 'binary';

function processorFor(format: Format, encoding: Encoding, registry: FakeRegistry, schema = '') {
  const config = parseConfigText(
    `
models: { m: { path: x } }
pipelines: { p: { task: featureExtraction, model: m } }
connections:
  kafka: { brokers: [localhost:9092] }
  schemaRegistry: { urls: ['http://registry:8081'] }
routes:
  - source: { type: kafka, topic: docs, groupId: g }
    pipeline: p
    input: { format: ${format}, field: text }
    output: { field: embedding, vectors: { encoding: ${encoding} }${schema} }
    sink: { type: kafka, topic: vectors }
    dlq: { type: kafka, topic: dead }
`,
    {},
  );
  const route = config.routes[0] as (typeof config.routes)[number];
  const connection = new RegistryConnection(registry, silentLogger, {
    backoff: () => ({ next: () => 1 }),
  });
  const schemas = new RouteSchemas(route, connection, silentLogger);
  return new RecordProcessor(route, 'featureExtraction', config.limits, embed, { schemas });
}

async function inputOf(format: Format, registry: FakeRegistry): Promise<Buffer> {
  if (format === 'avro') {
    await registry.client.register('docs-value', {
      schemaType: 'AVRO',
      schema: JSON.stringify(DOC),
    });
    const serializer = new AvroSerializer(registry.client, SerdeType.VALUE, {
      useLatestVersion: true,
    });
    return serializer.serialize('docs', { text: 'hello' });
  }
  if (format === 'protobuf') {
    const id = await registry.client.register('docs-value', {
      schemaType: 'PROTOBUF',
      schema: PROTO,
    });
    const Doc = protobuf.parse(PROTO, { keepCase: true }).root.lookupType('example.Doc');
    return frame(id, Buffer.from(Doc.encode(Doc.fromObject({ text: 'hello' })).finish()), [0]);
  }
  const id = await registry.client.register('docs-value', {
    schemaType: 'JSON',
    schema: JSON.stringify(JSON_DOC),
  });
  return frame(id, Buffer.from('{"text":"hello"}'));
}

const record = (value: Buffer): SourceRecord => ({
  value,
  key: Buffer.from('k'),
  headers: {},
  origin: { kind: 'kafka', topic: 'docs', partition: 0, offset: '1' },
});

interface Written {
  /** The output field as the derived schema declares it. */
  declared: unknown;
  /** The output field as an independent reader decodes it. */
  field: unknown;
  headers: Record<string, string | Buffer | undefined>;
}

async function run(format: Format, encoding: Encoding): Promise<Written> {
  const registry = new FakeRegistry();
  const processor = processorFor(format, encoding, registry);
  const outcome = await processor.process(record(await inputOf(format, registry)));
  if (outcome.kind !== 'output')
    throw new Error(`expected an output, got ${JSON.stringify(outcome)}`);
  const schema = registry.registered.at(-1)?.schema.schema ?? '';
  const headers = outcome.record.headers as Written['headers'];
  if (format === 'avro') {
    const declared = (
      JSON.parse(schema) as { fields: { name: string; type: unknown }[] }
    ).fields.at(-1);
    const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      outcome.record.value,
    )) as { text: string; embedding: unknown };
    expect(read.text).toBe('hello');
    return { declared: declared?.type, field: read.embedding, headers };
  }
  if (format === 'json-schema') {
    const declared = (JSON.parse(schema) as { properties: Record<string, unknown> }).properties[
      'embedding'
    ];
    const read = (await new JsonDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      outcome.record.value,
    )) as { text: string; embedding: unknown };
    expect(read.text).toBe('hello');
    return { declared, field: read.embedding, headers };
  }
  const framed = unframe(outcome.record.value, true);
  expect(framed.schemaId).toBe(registry.registered.at(-1)?.id);
  const Derived = protobuf.parse(schema, { keepCase: true }).root.lookupType('example.Doc');
  const read = Derived.toObject(Derived.decode(framed.payload)) as {
    text: string;
    embedding: unknown;
  };
  expect(read.text).toBe('hello');
  const line = /^.*\bembedding = \d+;$/m.exec(schema)?.[0].trim();
  const nested = /message HugotEmbedding \{[^}]*\}/.exec(schema)?.[0];
  return {
    declared: nested === undefined ? line : `${nested} ${line}`,
    field: read.embedding,
    headers,
  };
}

const bytesOf = (value: unknown): Buffer => {
  if (!(value instanceof Uint8Array)) throw new Error(`expected bytes, got ${typeof value}`);
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
};

function float32s(bytes: Buffer): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(i * 4, true));
}

type Float16Reader = DataView & { getFloat16(offset: number, le: boolean): number };
function float16s(bytes: Buffer): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) as Float16Reader;
  return Array.from({ length: bytes.length / 2 }, (_, i) => view.getFloat16(i * 2, true));
}

const int8s = (bytes: Buffer): number[] =>
  Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length));

/** The sign bits, unpacked: what a reader of `binary` gets back. */
const signs = (bytes: Buffer, n: number): boolean[] =>
  Array.from({ length: n }, (_, i) => ((bytes[i >> 3] ?? 0) & (0x80 >> (i & 7))) !== 0);

/** Within half an f16 step of each value (11 significant bits). */
function expectNearF16(read: number[]): void {
  expect(read).toHaveLength(VECTOR.length);
  read.forEach((x, i) => {
    const v = VECTOR[i] as number;
    expect(Math.abs(x - v)).toBeLessThanOrEqual(Math.abs(v) * 2 ** -11 + 1e-7);
  });
  // f16 is not f32: the decode is rounded, not the f32 values again.
  expect(read).not.toEqual(Array.from(VECTOR));
}

const OPTIONAL_BYTES = ['null', 'bytes'];

describe('compact vectors in schema outputs', () => {
  for (const encoding of ['base64-f32', 'base64-f16', 'binary'] as const) {
    const decode = (bytes: Buffer): void => {
      if (encoding === 'base64-f32') expect(float32s(bytes)).toEqual(Array.from(VECTOR));
      else if (encoding === 'base64-f16') expectNearF16(float16s(bytes));
      else {
        expect(bytes).toHaveLength(Math.ceil(VECTOR.length / 8));
        expect(signs(bytes, VECTOR.length)).toEqual(Array.from(VECTOR, (v) => v > 0));
      }
    };

    it(`${encoding}: Avro writes a bytes field holding the raw vector`, async () => {
      const out = await run('avro', encoding);
      expect(out.declared).toEqual(OPTIONAL_BYTES);
      decode(bytesOf(out.field));
      expect(out.headers['x-hugot-vector-encoding']).toBe(encoding);
      expect(out.headers['x-hugot-vector-dimensions']).toBe(String(VECTOR.length));
    });

    it(`${encoding}: Protobuf writes a bytes field holding the raw vector`, async () => {
      const out = await run('protobuf', encoding);
      expect(out.declared).toBe('bytes embedding = 2;');
      decode(bytesOf(out.field));
      expect(out.headers['x-hugot-vector-encoding']).toBe(encoding);
    });

    it(`${encoding}: JSON Schema keeps base64 text, declared as such`, async () => {
      const out = await run('json-schema', encoding);
      expect(out.declared).toEqual({ type: 'string', contentEncoding: 'base64' });
      expect(typeof out.field).toBe('string');
      decode(Buffer.from(out.field as string, 'base64'));
    });
  }

  it('int8: Avro writes a record of the int8 values as bytes and the scale as a double', async () => {
    const out = await run('avro', 'int8');
    expect(out.declared).toEqual([
      'null',
      {
        type: 'record',
        name: 'Embedding',
        namespace: 'hugot.output',
        fields: [
          { name: 'int8', type: OPTIONAL_BYTES, default: null },
          { name: 'scale', type: ['null', 'double'], default: null },
        ],
      },
    ]);
    const { int8, scale } = out.field as { int8: unknown; scale: number };
    const values = int8s(bytesOf(int8));
    expect(Math.max(...values.map(Math.abs))).toBe(127);
    values.forEach((q, i) =>
      expect(Math.abs(q * scale - (VECTOR[i] as number))).toBeLessThanOrEqual(scale / 2 + 1e-9),
    );
  });

  it('int8: Protobuf writes a message of bytes and a double', async () => {
    const out = await run('protobuf', 'int8');
    expect(out.declared).toBe(
      'message HugotEmbedding { bytes int8 = 1; double scale = 2; } HugotEmbedding embedding = 2;',
    );
    const { int8, scale } = out.field as { int8: unknown; scale: number };
    const values = int8s(bytesOf(int8));
    values.forEach((q, i) =>
      expect(Math.abs(q * scale - (VECTOR[i] as number))).toBeLessThanOrEqual(scale / 2 + 1e-9),
    );
  });

  it('int8: JSON Schema keeps the values as numbers, as the JSON output writes them', async () => {
    const out = await run('json-schema', 'int8');
    expect(out.declared).toEqual({
      type: 'object',
      properties: { int8: { type: 'array', items: { type: 'number' } }, scale: { type: 'number' } },
    });
    const { int8, scale } = out.field as { int8: number[]; scale: number };
    expect(int8).toHaveLength(VECTOR.length);
    int8.forEach((q, i) =>
      expect(Math.abs(q * scale - (VECTOR[i] as number))).toBeLessThanOrEqual(scale / 2 + 1e-9),
    );
  });

  it('json: an array of float in each format (Avro float, Protobuf repeated float)', async () => {
    const avro = await run('avro', 'json');
    expect(avro.declared).toEqual(['null', { type: 'array', items: 'float' }]);
    expect(avro.field).toEqual(Array.from(VECTOR));
    const proto = await run('protobuf', 'json');
    expect(proto.declared).toBe('repeated float embedding = 2;');
    expect(proto.field).toEqual(Array.from(VECTOR));
    const json = await run('json-schema', 'json');
    expect(json.declared).toEqual({ type: 'array', items: { type: 'number' } });
    expect(json.field).toEqual(Array.from(VECTOR));
  });

  it('a given Avro schema takes the vector in its bytes field and refuses a string field', async () => {
    for (const type of ['bytes', 'string'] as const) {
      const registry = new FakeRegistry();
      const subject = `scored-${type}`;
      const schema = JSON.stringify({
        type: 'record',
        name: 'Scored',
        fields: [
          { name: 'text', type: 'string' },
          { name: 'embedding', type },
        ],
      });
      await registry.client.register(`${subject}-value`, { schemaType: 'AVRO', schema });
      const processor = processorFor(
        'json',
        'base64-f32',
        registry,
        `, schema: { subject: ${subject}-value, version: latest }`,
      );
      const outcome = await processor.process(record(Buffer.from('{"text":"hello"}')));
      if (type === 'string') {
        expect(outcome.kind).toBe('dead');
        if (outcome.kind === 'dead') {
          expect(outcome.code).toBe('SCHEMA_REFUSED');
          expect(outcome.message).toMatch(/embedding is bytes, not string/);
        }
        continue;
      }
      if (outcome.kind !== 'output') throw new Error(`expected an output, got ${outcome.kind}`);
      const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
        // The mock client finds an id only under its subject.
        subject,
        outcome.record.value,
      )) as { text: string; embedding: unknown };
      expect(read.text).toBe('hello');
      expect(float32s(bytesOf(read.embedding))).toEqual(Array.from(VECTOR));
    }
  });
});
