// A route reading Schema Registry records and writing them with a derived schema, end to end
// through the processor, against Confluent's in-memory registry client and its serializers.
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
import type { ConnectionHealth } from '../../../src/connectors/connection-health.ts';
import { waitForProgress } from '../../helpers/progress.ts';
import { FakeRegistry } from './fake-registry.ts';

const DOC_V1 = {
  type: 'record',
  name: 'Doc',
  namespace: 'example',
  fields: [
    { name: 'id', type: 'long' },
    {
      name: 'body',
      type: { type: 'record', name: 'Body', fields: [{ name: 'text', type: 'string' }] },
    },
  ],
};
const DOC_V2 = {
  ...DOC_V1,
  fields: [...DOC_V1.fields, { name: 'lang', type: 'string', default: 'en' }],
};

function routeOf(yaml: string, task = 'featureExtraction') {
  const config = parseConfigText(
    `
models: { m: { path: x } }
pipelines: { p: { task: ${task}, model: m } }
connections:
  kafka: { brokers: [localhost:9092] }
  schemaRegistry: { urls: ['http://registry:8081'] }
routes:
  - source: { type: kafka, topic: docs, groupId: g }
    pipeline: p
${yaml}
    sink: { type: kafka, topic: vectors }
    dlq: { type: kafka, topic: dead }
`,
    {},
  );
  return { config, route: config.routes[0] as (typeof config.routes)[number] };
}

function record(value: Buffer): SourceRecord {
  return {
    value,
    key: Buffer.from('k1'),
    headers: { trace: 'abc' },
    origin: { kind: 'kafka', topic: 'docs', partition: 0, offset: '5' },
  };
}

const embed: Submit = (_, input) =>
  Promise.resolve(new Float32Array([String(input).length, 0.5, -0.25]));

function processorFor(yaml: string, registry: FakeRegistry, submit: Submit = embed, task?: string) {
  const { config, route } = routeOf(yaml, task);
  // Outages retried at once: the test waits on the registry's answers, not on a clock.
  const connection = new RegistryConnection(registry, silentLogger, {
    backoff: () => ({ next: () => 1 }),
  });
  const schemas = new RouteSchemas(route, connection, silentLogger);
  return {
    connection,
    processor: new RecordProcessor(route, task ?? 'featureExtraction', config.limits, submit, {
      schemas,
    }),
  };
}

async function avroBytes(registry: FakeRegistry, schema: object, value: object): Promise<Buffer> {
  await registry.client.register('docs-value', {
    schemaType: 'AVRO',
    schema: JSON.stringify(schema),
  });
  const serializer = new AvroSerializer(registry.client, SerdeType.VALUE, {
    useLatestVersion: true,
  });
  return serializer.serialize('docs', value);
}

const avroRoute = `
    input: { format: avro, field: body.text }
    output: { field: embedding }`;

describe('Schema Registry routes', () => {
  it('reads Avro, writes Avro with a derived schema that an independent deserializer reads back', async () => {
    const registry = new FakeRegistry();
    const { processor } = processorFor(avroRoute, registry);
    const outcome = await processor.process(
      record(await avroBytes(registry, DOC_V1, { id: 7, body: { text: 'hello' } })),
    );
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    expect(registry.registered.map((r) => r.subject)).toEqual(['vectors-value']);
    const derived = JSON.parse(registry.registered[0]?.schema.schema ?? '{}') as typeof DOC_V1;
    expect(derived.fields.map((f) => f.name)).toEqual(['id', 'body', 'embedding']);
    expect(derived.fields[2]).toEqual({
      name: 'embedding',
      type: ['null', { type: 'array', items: 'float' }],
      default: null,
    });
    expect(unframe(outcome.record.value, false).schemaId).toBe(registry.registered[0]?.id);
    const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      outcome.record.value,
    )) as { id: number; body: { text: string }; embedding: number[] };
    expect(read.id).toBe(7);
    expect(read.body.text).toBe('hello');
    expect(read.embedding).toEqual([5, 0.5, -0.25]);
    expect(outcome.record.key?.toString()).toBe('k1');
    expect(outcome.record.headers).toEqual({ trace: 'abc' });
  });

  it('derives again when the producer moves to a compatible v2, keeping v1 records flowing', async () => {
    const registry = new FakeRegistry();
    const { processor } = processorFor(avroRoute, registry);
    const v1 = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'a' } });
    const v2 = await avroBytes(registry, DOC_V2, { id: 2, body: { text: 'bb' }, lang: 'de' });
    const outcomes = [];
    for (const bytes of [v1, v2, v1, v2]) outcomes.push(await processor.process(record(bytes)));
    expect(outcomes.map((o) => o.kind)).toEqual(['output', 'output', 'output', 'output']);
    // One derived schema per writer schema, each registered once.
    expect(registry.registered).toHaveLength(2);
    const second = JSON.parse(registry.registered[1]?.schema.schema ?? '{}') as typeof DOC_V2;
    expect(second.fields.map((f) => f.name)).toEqual(['id', 'body', 'lang', 'embedding']);
    const last = outcomes[3];
    if (last?.kind !== 'output') throw new Error('expected an output');
    const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      last.record.value,
    )) as { lang: string; embedding: number[] };
    expect(read.lang).toBe('de');
    expect(read.embedding[0]).toBe(2);
  });

  it('dead-letters an unknown schema id and undecodable bytes with the original bytes and headers', async () => {
    const registry = new FakeRegistry();
    const { processor } = processorFor(avroRoute, registry);
    const unknown = frame(9999, Buffer.from([2, 4]));
    const notFramed = Buffer.from('{"body":{"text":"x"}}');
    const good = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'a' } });
    const truncated = good.subarray(0, good.length - 2);
    const expected = [
      [unknown, 'SCHEMA_UNKNOWN_ID', /9999/],
      [notFramed, 'SCHEMA_DECODE', /wire format/],
      [truncated, 'SCHEMA_DECODE', /does not decode/],
    ] as const;
    for (const [bytes, code, reason] of expected) {
      const outcome = await processor.process(record(bytes));
      expect(outcome.kind).toBe('dead');
      if (outcome.kind !== 'dead') continue;
      expect(outcome.code).toBe(code);
      expect(outcome.message).toMatch(reason);
      expect(outcome.record.value).toEqual(bytes);
      expect(outcome.record.headers['trace']).toBe('abc');
      expect(outcome.record.headers['hugot.error.code']).toBe(code);
      expect(outcome.record.headers['hugot.error.stage']).toBe('decode');
    }
  });

  it('waits out a registry outage without dead-lettering, reporting it degraded then healthy', async () => {
    const registry = new FakeRegistry();
    const bytes = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'abc' } });
    const { processor, connection } = processorFor(avroRoute, registry);
    const health: ConnectionHealth['state'][] = [];
    connection.onHealth((h) => health.push(h.state));
    registry.outageCalls = 3;
    const outcome = await processor.process(record(bytes));
    expect(outcome.kind).toBe('output');
    expect(health).toEqual(['degraded', 'degraded', 'degraded', 'healthy']);
    expect(registry.outageCalls).toBe(0);
  });

  it('leaves a record that waits for the registry when the worker stops (never a dead letter)', async () => {
    const registry = new FakeRegistry();
    const bytes = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'abc' } });
    const { processor, connection } = processorFor(avroRoute, registry);
    registry.outageCalls = 1_000_000;
    const pending = processor.process(record(bytes));
    await waitForProgress(() => registry.calls, {
      what: 'the record asking the registry',
      done: (calls) => calls > 0,
      intervalMs: 5,
    });
    connection.close();
    await expect(pending).rejects.toThrow(/stopping/);
  });

  it('dead-letters an output the registry refuses (an incompatible derived schema)', async () => {
    const registry = new FakeRegistry();
    const bytes = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'abc' } });
    registry.compatible = false;
    const { processor } = processorFor(avroRoute, registry);
    const outcome = await processor.process(record(bytes));
    expect(outcome.kind).toBe('dead');
    if (outcome.kind !== 'dead') return;
    expect(outcome.code).toBe('SCHEMA_REFUSED');
    expect(outcome.record.headers['hugot.error.stage']).toBe('output');
    expect(outcome.record.value).toEqual(bytes);
  });

  it('widens a derived record type with keys later results add (labels)', async () => {
    const registry = new FakeRegistry();
    let call = 0;
    const classify: Submit = () => {
      call += 1;
      return Promise.resolve(
        call === 1 ? [{ label: 'pos', score: 0.9 }] : [{ label: 'neg', score: 0.1, extra: 'x' }],
      );
    };
    const { processor } = processorFor(
      `
    input: { format: avro, field: body.text }
    output: { field: labels, keys: hugot }`,
      registry,
      classify,
      'textClassification',
    );
    const bytes = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'abc' } });
    const first = await processor.process(record(bytes));
    const second = await processor.process(record(bytes));
    expect([first.kind, second.kind]).toEqual(['output', 'output']);
    expect(registry.registered).toHaveLength(2);
    if (second.kind !== 'output') return;
    const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      second.record.value,
    )) as { labels: unknown };
    expect(JSON.stringify(read.labels)).toContain('neg');
  });

  it('reads JSON Schema and writes it with a derived property', async () => {
    const registry = new FakeRegistry();
    const schema = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      title: 'Doc',
      type: 'object',
      properties: { text: { type: 'string' } },
    };
    const id = await registry.client.register('docs-value', {
      schemaType: 'JSON',
      schema: JSON.stringify(schema),
    });
    const { processor } = processorFor(
      `
    input: { format: json-schema, field: text }
    output: { field: embedding }`,
      registry,
    );
    const outcome = await processor.process(record(frame(id, Buffer.from('{"text":"hey"}'))));
    if (outcome.kind !== 'output') throw new Error(`expected an output, got ${outcome.kind}`);
    const derived = JSON.parse(registry.registered[0]?.schema.schema ?? '{}') as typeof schema;
    expect(Object.keys(derived.properties)).toEqual(['text', 'embedding']);
    const read = (await new JsonDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      'vectors',
      outcome.record.value,
    )) as { text: string; embedding: number[] };
    expect(read).toEqual({ text: 'hey', embedding: [3, 0.5, -0.25] });
  });

  it('reads Protobuf (a second message, by its indexes) and writes a derived message', async () => {
    const registry = new FakeRegistry();
    const proto = `syntax = "proto3";
package example;
// The first message is not the one records hold.
message Other { string x = 1; }
message Doc {
  int64 id = 1;
  string text = 2;
  reserved 7;
}
`;
    const id = await registry.client.register('docs-value', {
      schemaType: 'PROTOBUF',
      schema: proto,
    });
    const root = protobuf.parse(proto, { keepCase: true }).root;
    const Doc = root.lookupType('example.Doc');
    const payload = Doc.encode(Doc.fromObject({ id: '9007199254740993', text: 'hello' })).finish();
    const { processor } = processorFor(
      `
    input: { format: protobuf, field: text }
    output: { field: embedding }`,
      registry,
    );
    const outcome = await processor.process(record(frame(id, payload, [1])));
    if (outcome.kind !== 'output')
      throw new Error(`expected an output, got ${JSON.stringify(outcome)}`);
    const derivedText = registry.registered[0]?.schema.schema ?? '';
    expect(derivedText).toContain('repeated float embedding = 8;');
    expect(derivedText).toContain('// The first message is not the one records hold.');
    const framed = unframe(outcome.record.value, true);
    expect(framed.messageIndexes).toEqual([1]);
    const Derived = protobuf.parse(derivedText, { keepCase: true }).root.lookupType('example.Doc');
    const read = Derived.toObject(Derived.decode(framed.payload), { longs: String });
    // A 64-bit id beyond 2^53 stays exact.
    expect(read).toEqual({ id: '9007199254740993', text: 'hello', embedding: [5, 0.5, -0.25] });
  });

  it('decodes a schema-format key too: a key that does not decode is dead-lettered', async () => {
    const registry = new FakeRegistry();
    const { processor } = processorFor(
      `
    input: { format: avro, keyFormat: avro, field: body.text }
    output: { field: embedding }`,
      registry,
    );
    const value = await avroBytes(registry, DOC_V1, { id: 1, body: { text: 'abc' } });
    const keyId = await registry.client.register('docs-key', {
      schemaType: 'AVRO',
      schema: '"string"',
    });
    const goodKey = frame(keyId, Buffer.from([6, 0x6b, 0x65, 0x79]));
    const ok = await processor.process({ ...record(value), key: goodKey });
    expect(ok.kind).toBe('output');
    if (ok.kind === 'output') expect(ok.record.key).toEqual(goodKey);
    const bad = await processor.process({ ...record(value), key: Buffer.from('plain-key') });
    expect(bad.kind).toBe('dead');
    if (bad.kind === 'dead') {
      expect(bad.code).toBe('SCHEMA_DECODE');
      expect(bad.record.key?.toString()).toBe('plain-key');
    }
  });

  it('writes a JSON record with a given schema, and dead-letters an output that does not fit it', async () => {
    const registry = new FakeRegistry();
    const schema = JSON.stringify({
      type: 'record',
      name: 'Scored',
      fields: [
        { name: 'text', type: 'string' },
        { name: 'embedding', type: { type: 'array', items: 'float' } },
      ],
    });
    const id = await registry.client.register('scored-value', { schemaType: 'AVRO', schema });
    const { processor } = processorFor(
      `
    input: { format: json, field: text }
    output: { field: embedding, schema: { subject: scored-value, version: latest } }`,
      registry,
    );
    const outcome = await processor.process(record(Buffer.from('{"text":"hello"}')));
    if (outcome.kind !== 'output') throw new Error(`expected an output, got ${outcome.kind}`);
    expect(unframe(outcome.record.value, false).schemaId).toBe(id);
    const read = (await new AvroDeserializer(registry.client, SerdeType.VALUE, {}).deserialize(
      // The mock client finds an id only under its subject.
      'scored',
      outcome.record.value,
    )) as { text: string; embedding: number[] };
    expect(read).toEqual({ text: 'hello', embedding: [5, 0.5, -0.25] });
    // A field the schema does not have is fine; a field of the wrong type is refused.
    const extra = await processor.process(record(Buffer.from('{"text":"hello","x":1}')));
    expect(extra.kind).toBe('output');
    const wrong = await processor.process(record(Buffer.from('{"text":"hi","embedding":"no"}')));
    expect(wrong.kind).toBe('dead');
  });
});
