// bench:e2e's Avro pass: the same records as Avro in the Confluent wire format, embedded by the
// worker and written as Avro with a derived schema (the input's plus `embedding`, an array of
// float), read back by Confluent's own deserializer through the registry. Uses SCHEMA_REGISTRY_URL
// or starts the project's local registry. Reports the pass time, lost and duplicate records, and
// the bytes per output record of the Avro vector against the same record as JSON text.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AvroDeserializer,
  AvroSerializer,
  SchemaRegistryClient,
  SerdeType,
} from '@confluentinc/schemaregistry';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { defaultCacheDir } from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { startRegistry } from '../../scripts/services/registry-local.ts';
import type { KafkaKit } from '../../test/integration/helpers/kafka-kit.ts';

export interface AvroPassOptions {
  kit: KafkaKit;
  registryUrl: string;
  modelPath: string;
  pipeline: Record<string, unknown>;
  records: { id: string; text: string }[];
  warmup: { id: string; text: string }[];
  partitions: number;
  connection: Record<string, unknown>;
  log: (line: string) => void;
}

export interface AvroPass {
  seconds: number;
  lost: number;
  duplicates: number;
  /** Mean bytes of an output record's value: Avro (derived schema) and the same record as JSON. */
  bytesPerRecord: { avro: number; json: number };
}

const DOC = JSON.stringify({
  type: 'record',
  name: 'Doc',
  namespace: 'hugot.bench',
  fields: [
    { name: 'id', type: 'string' },
    { name: 'text', type: 'string' },
  ],
});

/** The registry the pass talks to, and how to stop it when the pass started it. */
export async function benchRegistry(): Promise<{ url: string; stop: () => Promise<void> }> {
  const given = process.env['SCHEMA_REGISTRY_URL'];
  if (given !== undefined && given !== '') return { url: given, stop: () => Promise.resolve() };
  const dataDir = mkdtempSync(join(tmpdir(), 'hugot-bench-registry-'));
  const registry = await startRegistry({
    cacheDir: defaultCacheDir(),
    port: await freePort(),
    dataDir,
  });
  return {
    url: registry.url,
    stop: async () => {
      await registry.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function avroPass(options: AvroPassOptions): Promise<AvroPass> {
  const { kit, records, warmup, partitions } = options;
  const suffix = Math.random().toString(36).slice(2, 8);
  const input = `bench-e2e-avro-in-${suffix}`;
  const output = `bench-e2e-avro-out-${suffix}`;
  await kit.createTopics([
    { topic: input, partitions },
    { topic: output, partitions },
  ]);
  const client = new SchemaRegistryClient({ baseURLs: [options.registryUrl], maxRetries: 0 });
  await client.register(`${input}-value`, { schemaType: 'AVRO', schema: DOC });
  const serializer = new AvroSerializer(client, SerdeType.VALUE, { useLatestVersion: true });
  const encode = async (rs: { id: string; text: string }[]) =>
    Promise.all(
      rs.map(async (r, i) => ({
        partition: i % partitions,
        key: r.id,
        value: await serializer.serialize(input, r),
      })),
    );
  // Encoded before the clock starts: the pass times the worker, not the benchmark's producer.
  const warm = await encode(warmup);
  const measured = await encode(records);
  const config = configSchema.parse({
    models: { minilm: { path: options.modelPath } },
    pipelines: { embed: options.pipeline },
    routes: [
      {
        name: 'embed',
        source: { type: 'kafka', topic: input, groupId: `bench-e2e-avro-${suffix}` },
        pipeline: 'embed',
        input: { format: 'avro', field: 'text' },
        output: { mode: 'merge', field: 'embedding' },
        sink: { type: 'kafka', topic: output },
      },
    ],
    connections: { kafka: options.connection, schemaRegistry: { urls: [options.registryUrl] } },
  });
  const outputCount = async (): Promise<number> => {
    let total = 0;
    for (const high of (await kit.endOffsets(output)).values()) total += Number(high);
    return total;
  };
  const waitForOutputs = async (n: number): Promise<void> => {
    while ((await outputCount()) < n) await new Promise((r) => setTimeout(r, 50));
  };
  await kit.produce(input, warm);
  const worker = await StreamWorker.start(config, { logger: silentLogger });
  await waitForOutputs(warm.length);
  const t0 = performance.now();
  await kit.produce(input, measured);
  await waitForOutputs(warm.length + measured.length);
  const seconds = (performance.now() - t0) / 1000;
  await worker.stop(60_000);

  const outputs = await kit.readAll(output, { count: warm.length + records.length, quietMs: 1000 });
  const deserializer = new AvroDeserializer(client, SerdeType.VALUE, {});
  const seen = new Map<string, number>();
  let avroBytes = 0;
  let jsonBytes = 0;
  for (const o of outputs) {
    const doc = (await deserializer.deserialize(output, o.value)) as { id: string };
    seen.set(doc.id, (seen.get(doc.id) ?? 0) + 1);
    avroBytes += o.value.length;
    jsonBytes += Buffer.byteLength(JSON.stringify(doc));
  }
  const lost = records.filter((r) => !seen.has(r.id)).length;
  let duplicates = 0;
  for (const n of seen.values()) duplicates += n - 1;
  const n = Math.max(outputs.length, 1);
  const bytesPerRecord = { avro: Math.round(avroBytes / n), json: Math.round(jsonBytes / n) };
  options.log(
    `kafka e2e avro: ${(records.length / seconds).toFixed(1)} records/s; bytes per record: avro ${bytesPerRecord.avro}, json ${bytesPerRecord.json}`,
  );
  return { seconds, lost, duplicates, bytesPerRecord };
}
