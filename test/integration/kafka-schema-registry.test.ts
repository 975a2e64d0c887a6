// Schema Registry routes against a real Kafka broker and a real registry (the project's local
// Apicurio, Confluent API): Avro in, embeddings out as Avro with a derived schema, read back by an
// independent consumer that decodes through the registry with Confluent's deserializer; a
// producer that moves to v2 mid-stream; Protobuf and JSON Schema routes; an unknown schema id
// dead-lettered with its original bytes; base64-f16 vectors as an Avro bytes field, and what the
// registry says when a vector moves from base64 text to bytes; and the registry stopped for 20 s
// under load, 0 lost.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AvroDeserializer,
  AvroSerializer,
  Compatibility,
  JsonDeserializer,
  SchemaRegistryClient,
  SerdeType,
} from '@confluentinc/schemaregistry';
import protobuf from 'protobufjs';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { frame, unframe } from '../../src/schema/wire-format.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaConnection, type ReadRecord } from './helpers/kafka-kit.ts';
import { stoppableSchemaRegistry } from './helpers/schema-registry.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const registry = stoppableSchemaRegistry('kafka-schema-registry');
const EMBEDDER = join(import.meta.dirname, '..', 'fixtures', 'models', 'bert-feature-extraction');

const client = (): SchemaRegistryClient =>
  new SchemaRegistryClient({ baseURLs: [registry.url()], maxRetries: 0 });

function docSchema(fields: object[]): string {
  return JSON.stringify({ type: 'record', name: 'Doc', namespace: 'hugot.it', fields });
}
const V1 = docSchema([
  { name: 'id', type: 'string' },
  { name: 'text', type: 'string' },
]);
const V2 = docSchema([
  { name: 'id', type: 'string' },
  { name: 'text', type: 'string' },
  { name: 'lang', type: 'string', default: 'en' },
]);

interface Topics {
  input: string;
  output: string;
  dlq: string;
  groupId: string;
}

async function topics(partitions = 1): Promise<Topics> {
  const names = {
    input: uniqueName('docs'),
    output: uniqueName('vectors'),
    dlq: uniqueName('dead'),
    groupId: uniqueName('group'),
  };
  await kit.createTopics([
    { topic: names.input, partitions },
    { topic: names.output, partitions },
    { topic: names.dlq, partitions: 1 },
  ]);
  return names;
}

function workerConfig(t: Topics, format: string, field = 'text') {
  return configSchema.parse({
    models: { emb: { path: EMBEDDER } },
    pipelines: { embed: { task: 'featureExtraction', model: 'emb' } },
    routes: [
      {
        name: 'embed',
        source: {
          type: 'kafka',
          topic: t.input,
          groupId: t.groupId,
          sessionTimeoutMs: 10_000,
          heartbeatIntervalMs: 1_000,
        },
        pipeline: 'embed',
        input: { format, field },
        output: { field: 'embedding' },
        sink: { type: 'kafka', topic: t.output },
        dlq: { type: 'kafka', topic: t.dlq },
      },
    ],
    shards: [{ device: 'cpu', threads: 2 }],
    batching: { maxBatchSize: 64, maxWaitMs: 5 },
    connections: {
      kafka: kafkaConnection(kit.brokers),
      schemaRegistry: { urls: [registry.url()], requestTimeoutMs: 2_000 },
    },
    delivery: { commitIntervalMs: 200 },
  });
}

async function avroSerializer(subject: string, schema: string): Promise<AvroSerializer> {
  const sr = client();
  await sr.register(subject, { schemaType: 'AVRO', schema });
  return new AvroSerializer(sr, SerdeType.VALUE, { useLatestVersion: true });
}

async function decodedAvro(
  records: ReadRecord[],
  topic: string,
): Promise<Record<string, unknown>[]> {
  // An independent reader: its own client, the registry's schemas by the ids in the records.
  const deserializer = new AvroDeserializer(client(), SerdeType.VALUE, {});
  return Promise.all(
    records.map(
      async (r) => (await deserializer.deserialize(topic, r.value)) as Record<string, unknown>,
    ),
  );
}

describe('Kafka with a Schema Registry', () => {
  it('Avro in, embeddings out as Avro with a derived schema, through a producer moving to v2 mid-stream', async () => {
    const t = await topics();
    const subject = `${t.input}-value`;
    const v1 = await avroSerializer(subject, V1);
    const first = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        v1.serialize(t.input, { id: `a${i}`, text: `first ${i}` }),
      ),
    );
    await kit.produce(
      t.input,
      first.map((value, i) => ({ partition: 0, key: `a${i}`, value, headers: { trace: `a${i}` } })),
    );
    const worker = await StreamWorker.start(workerConfig(t, 'avro'), { logger: silentLogger });
    try {
      await waitForProgress(async () => Number((await kit.endOffsets(t.output)).get(0) ?? 0), {
        what: 'v1 outputs',
        done: (n) => n >= 60,
        firstProgressMs: 120_000,
      });
      await client().updateCompatibility(subject, Compatibility.BACKWARD);
      const v2 = await avroSerializer(subject, V2);
      const second = await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          v2.serialize(t.input, { id: `b${i}`, text: `second ${i}`, lang: 'de' }),
        ),
      );
      await kit.produce(
        t.input,
        second.map((value, i) => ({ partition: 0, key: `b${i}`, value })),
      );
      const outputs = await kit.readAll(t.output, { count: 120, quietMs: 500 });
      const read = await decodedAvro(outputs, t.output);
      expect(read.map((r) => r['id'])).toEqual([
        ...Array.from({ length: 60 }, (_, i) => `a${i}`),
        ...Array.from({ length: 60 }, (_, i) => `b${i}`),
      ]);
      const dims = new Set(read.map((r) => (r['embedding'] as number[]).length));
      expect(dims.size).toBe(1);
      expect([...dims][0]).toBeGreaterThan(8);
      expect(read.slice(60).every((r) => r['lang'] === 'de')).toBe(true);
      expect(outputs[0]?.headers['trace']).toBe('a0');
      // Two derived versions under the output topic's subject, one per input version.
      const ids = new Set(outputs.map((o) => unframe(o.value, false).schemaId));
      expect(ids.size).toBe(2);
      expect(await client().getAllVersions(`${t.output}-value`)).toHaveLength(2);
    } finally {
      await worker.stop(20_000);
    }
  });

  it('dead-letters a record with an unknown schema id with its original bytes and headers', async () => {
    const t = await topics();
    const v1 = await avroSerializer(`${t.input}-value`, V1);
    const good = await v1.serialize(t.input, { id: 'g', text: 'fine' });
    const unknown = frame(2_000_000_000, Buffer.from([2, 0x61, 2, 0x62]));
    await kit.produce(t.input, [
      { partition: 0, key: 'u', value: unknown, headers: { trace: 'u' } },
      { partition: 0, key: 'g', value: good },
    ]);
    const worker = await StreamWorker.start(workerConfig(t, 'avro'), { logger: silentLogger });
    try {
      const dead = await kit.readAll(t.dlq, { count: 1, quietMs: 300 });
      const outputs = await kit.readAll(t.output, { count: 1, quietMs: 300 });
      expect(outputs.map((o) => o.key)).toEqual(['g']);
      expect(dead).toHaveLength(1);
      expect(dead[0]?.value.equals(unknown)).toBe(true);
      expect(dead[0]?.headers).toMatchObject({
        trace: 'u',
        'hugot.error.code': 'SCHEMA_UNKNOWN_ID',
        'hugot.error.stage': 'decode',
      });
      expect(dead[0]?.headers['hugot.error.message']).toMatch(/2000000000/);
    } finally {
      await worker.stop(20_000);
    }
  });

  it('Protobuf in and out with a derived message', async () => {
    const t = await topics();
    const proto = `syntax = "proto3";\npackage hugot.it;\nmessage Doc {\n  string id = 1;\n  string text = 2;\n}\n`;
    const id = await client().register(`${t.input}-value`, {
      schemaType: 'PROTOBUF',
      schema: proto,
    });
    const Doc = protobuf.parse(proto, { keepCase: true }).root.lookupType('hugot.it.Doc');
    await kit.produce(
      t.input,
      Array.from({ length: 20 }, (_, i) => ({
        partition: 0,
        key: `p${i}`,
        value: frame(
          id,
          Doc.encode(Doc.fromObject({ id: `p${i}`, text: `proto ${i}` })).finish(),
          [0],
        ),
      })),
    );
    const worker = await StreamWorker.start(workerConfig(t, 'protobuf'), { logger: silentLogger });
    try {
      const outputs = await kit.readAll(t.output, { count: 20, quietMs: 300 });
      expect(outputs).toHaveLength(20);
      const framed = unframe(outputs[0]?.value ?? Buffer.alloc(0), true);
      const derived = await client().getBySubjectAndId('', framed.schemaId);
      expect(derived.schema).toMatch(/repeated float embedding = 3;/);
      const Derived = protobuf
        .parse(derived.schema, { keepCase: true })
        .root.lookupType('hugot.it.Doc');
      const read = Derived.toObject(Derived.decode(framed.payload)) as {
        id: string;
        embedding: number[];
      };
      expect(read.id).toBe('p0');
      expect(read.embedding.length).toBeGreaterThan(8);
    } finally {
      await worker.stop(20_000);
    }
  });

  it('JSON Schema in and out with a derived property', async () => {
    const t = await topics();
    const schema = JSON.stringify({
      $schema: 'http://json-schema.org/draft-07/schema#',
      title: 'Doc',
      type: 'object',
      properties: { id: { type: 'string' }, text: { type: 'string' } },
    });
    const id = await client().register(`${t.input}-value`, { schemaType: 'JSON', schema });
    await kit.produce(
      t.input,
      Array.from({ length: 20 }, (_, i) => ({
        partition: 0,
        key: `j${i}`,
        value: frame(id, Buffer.from(JSON.stringify({ id: `j${i}`, text: `json ${i}` }))),
      })),
    );
    const worker = await StreamWorker.start(workerConfig(t, 'json-schema'), {
      logger: silentLogger,
    });
    try {
      const outputs = await kit.readAll(t.output, { count: 20, quietMs: 300 });
      const deserializer = new JsonDeserializer(client(), SerdeType.VALUE, {});
      const read = (await deserializer.deserialize(
        t.output,
        outputs[0]?.value ?? Buffer.alloc(0),
      )) as {
        id: string;
        embedding: number[];
      };
      expect(read.id).toBe('j0');
      expect(read.embedding.length).toBeGreaterThan(8);
    } finally {
      await worker.stop(20_000);
    }
  });

  it('Avro out with base64-f16 vectors as a bytes field, read back and compared with the json route', async () => {
    const t = await topics();
    const f16 = { output: uniqueName('vectors-f16'), groupId: uniqueName('group-f16') };
    await kit.createTopics([{ topic: f16.output, partitions: 1 }]);
    const v1 = await avroSerializer(`${t.input}-value`, V1);
    const inputs = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        v1.serialize(t.input, { id: `v${i}`, text: `text ${i}` }),
      ),
    );
    await kit.produce(
      t.input,
      inputs.map((value, i) => ({ partition: 0, key: `v${i}`, value })),
    );
    // Two routes over the same input: the plain (json) one and the base64-f16 one.
    const base = workerConfig(t, 'avro');
    const json = base.routes[0];
    if (json === undefined) throw new Error('no route');
    const config = configSchema.parse({
      ...base,
      routes: [
        json,
        {
          ...json,
          name: 'embed-f16',
          source: { ...json.source, groupId: f16.groupId },
          output: { ...json.output, vectors: { encoding: 'base64-f16' } },
          sink: { type: 'kafka', topic: f16.output },
        },
      ],
    });
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    try {
      const plain = await decodedAvro(
        await kit.readAll(t.output, { count: 20, quietMs: 300 }),
        t.output,
      );
      const compactRecords = await kit.readAll(f16.output, { count: 20, quietMs: 300 });
      const compact = await decodedAvro(compactRecords, f16.output);
      const derived = await client().getLatestSchemaMetadata(`${f16.output}-value`);
      const field = (
        JSON.parse(derived.schema) as { fields: { name: string; type: unknown }[] }
      ).fields.find((f) => f.name === 'embedding');
      expect(field?.type).toEqual(['null', 'bytes']);
      expect(compactRecords[0]?.headers['x-hugot-vector-encoding']).toBe('base64-f16');
      const byId = new Map(plain.map((r) => [r['id'], r['embedding'] as number[]]));
      for (const r of compact) {
        const bytes = r['embedding'];
        if (!(bytes instanceof Uint8Array)) throw new Error(`${String(r['id'])}: not bytes`);
        const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength) as DataView & {
          getFloat16(offset: number, le: boolean): number;
        };
        const halves = Array.from({ length: bytes.length / 2 }, (_, i) =>
          view.getFloat16(i * 2, true),
        );
        const floats = byId.get(r['id']) ?? [];
        expect(halves).toHaveLength(floats.length);
        expect(compactRecords[0]?.headers['x-hugot-vector-dimensions']).toBe(String(floats.length));
        // Half precision: 11 significant bits, so within 2^-11 of each value (relative).
        halves.forEach((h, i) => {
          const f = floats[i] as number;
          expect(Math.abs(h - f)).toBeLessThanOrEqual(Math.abs(f) * 2 ** -11 + 2 ** -25);
        });
      }
    } finally {
      await worker.stop(20_000);
    }
  });

  // An earlier deployment wrote the vector as base64 text (before vectors were bytes in schema
  // outputs, or a route moving from a JSON Schema topic); this one writes bytes. Avro's rules
  // promote string and bytes to each other, so the registry takes a new version under the same
  // subject (each record decoded by its own writer's id); its Protobuf rules call it a changed
  // field type, and the output is refused (SCHEMA_REFUSED) until the subject or rule changes.
  const PROTO_DOC = `syntax = "proto3";\npackage hugot.it;\nmessage Doc {\n  string id = 1;\n  string text = 2;\n}\n`;
  for (const format of ['avro', 'protobuf'] as const)
    it(`${format}: vectors moving from base64 text to bytes between deployments: ${format === 'avro' ? 'a new compatible version' : 'refused by the registry'}`, async () => {
      const t = await topics();
      const subject = `${t.output}-value`;
      let value: Buffer;
      if (format === 'avro') {
        const v1 = await avroSerializer(`${t.input}-value`, V1);
        value = await v1.serialize(t.input, { id: 'e', text: 'evolve' });
        // The earlier deployment's derived schema: the vector as base64 text.
        const earlier = docSchema([
          { name: 'id', type: 'string' },
          { name: 'text', type: 'string' },
          { name: 'embedding', type: ['null', 'string'], default: null },
        ]);
        await client().register(subject, { schemaType: 'AVRO', schema: earlier });
      } else {
        const id = await client().register(`${t.input}-value`, {
          schemaType: 'PROTOBUF',
          schema: PROTO_DOC,
        });
        const Doc = protobuf.parse(PROTO_DOC, { keepCase: true }).root.lookupType('hugot.it.Doc');
        value = frame(id, Doc.encode(Doc.fromObject({ id: 'e', text: 'evolve' })).finish(), [0]);
        await client().register(subject, {
          schemaType: 'PROTOBUF',
          schema: PROTO_DOC.replace('}\n', '  string embedding = 3;\n}\n'),
        });
      }
      await client().updateCompatibility(subject, Compatibility.BACKWARD);
      await kit.produce(t.input, [{ partition: 0, key: 'e', value }]);
      const base = workerConfig(t, format);
      const route = base.routes[0];
      if (route === undefined) throw new Error('no route');
      const config = configSchema.parse({
        ...base,
        routes: [{ ...route, output: { ...route.output, vectors: { encoding: 'base64-f16' } } }],
      });
      const worker = await StreamWorker.start(config, { logger: silentLogger });
      try {
        const ends = async (topic: string): Promise<number> =>
          Number((await kit.endOffsets(topic)).get(0) ?? 0);
        await waitForProgress(async () => (await ends(t.output)) + (await ends(t.dlq)), {
          what: 'the record, written or dead-lettered',
          done: (n) => n >= 1,
          firstProgressMs: 120_000,
        });
        if (format === 'protobuf') {
          // The registry's Protobuf rule calls string -> bytes a changed field type: refused.
          const [letter] = await kit.readAll(t.dlq, { count: 1, quietMs: 300 });
          expect(letter?.value.equals(value)).toBe(true);
          expect(letter?.headers['hugot.error.code']).toBe('SCHEMA_REFUSED');
          expect(letter?.headers['hugot.error.message']).toMatch(
            new RegExp(`not compatible with subject ${subject}`),
          );
          expect(await client().getAllVersions(subject)).toEqual([1]);
          return;
        }
        // Avro promotes string and bytes to each other: a compatible new version.
        expect(await ends(t.dlq)).toBe(0);
        expect(await client().getAllVersions(subject)).toEqual([1, 2]);
        const [out] = await kit.readAll(t.output, { count: 1, quietMs: 300 });
        const latest = await client().getLatestSchemaMetadata(subject);
        expect(unframe(out?.value ?? Buffer.alloc(0), false).schemaId).toBe(latest.id);
        const [read] = await decodedAvro(out === undefined ? [] : [out], t.output);
        expect(read?.['embedding']).toBeInstanceOf(Uint8Array);
      } finally {
        await worker.stop(20_000);
      }
    });

  it.skipIf(!registry.managed)(
    'waits out the registry stopped for 20 s under load: nothing lost, nothing dead-lettered',
    async () => {
      const t = await topics(2);
      const subject = `${t.input}-value`;
      const v1 = await avroSerializer(subject, V1);
      // Serialized before v2 exists (the serializer writes the subject's latest version).
      const warm = await Promise.all(
        Array.from({ length: 100 }, (_, i) =>
          v1.serialize(t.input, { id: `w${i}`, text: `warm ${i}` }),
        ),
      );
      // v2 is registered now, but the worker first meets it while the registry is down.
      await client().updateCompatibility(subject, Compatibility.BACKWARD);
      const v2 = await avroSerializer(subject, V2);
      const worker = await StreamWorker.start(workerConfig(t, 'avro'), { logger: silentLogger });
      const total = 600;
      try {
        await kit.produce(
          t.input,
          warm.map((value, i) => ({ partition: i % 2, key: `w${i}`, value })),
        );
        const outputs = async (): Promise<number> =>
          [...(await kit.endOffsets(t.output)).values()].reduce((a, b) => a + Number(b), 0);
        await waitForProgress(outputs, {
          what: 'warm-up outputs',
          done: (n) => n >= 100,
          firstProgressMs: 120_000,
        });
        // Serialized while the registry is up: the test's producer needs it too.
        const load = await Promise.all(
          Array.from({ length: total - 100 }, (_, i) =>
            v2.serialize(t.input, { id: `o${i}`, text: `during ${i}`, lang: 'fr' }),
          ),
        );
        await registry.stop();
        await kit.produce(
          t.input,
          load.map((value, i) => ({ partition: i % 2, key: `o${i}`, value })),
        );
        await waitForProgress(() => worker.health.readiness().reasons.join(' '), {
          what: 'readiness naming the Schema Registry',
          done: (reasons) => /Schema Registry/.test(reasons),
        });
        // The outage itself: a scenario's length, not a wait for progress.
        await sleep(20_000);
        expect(await outputs()).toBe(100);
        await registry.start();
        const all = await kit.readAll(t.output, { count: total, quietMs: 500 });
        const keys = new Set(all.map((r) => r.key));
        expect(keys.size).toBe(total);
        expect(Number((await kit.endOffsets(t.dlq)).get(0) ?? 0)).toBe(0);
        expect(worker.health.readiness().ok).toBe(true);
      } finally {
        await worker.stop(20_000);
      }
    },
  );
});
