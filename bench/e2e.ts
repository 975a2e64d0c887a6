// npm run bench:e2e — Kafka -> featureExtraction (all-MiniLM-L6-v2) -> Kafka through the stream
// worker, against the in-process API (Engine.submit) on the same spam-assassin records in the
// same run. Uses KAFKA_BROKERS or starts its own local broker. Ends with one JSON line:
// {"bench":"e2e","ratios":{"vs_in_process":R},"records":N,"lost":L,"duplicates":D}
// Options: --records N (default 2000).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { configSchema } from '../src/config/schema.ts';
import { Engine } from '../src/engine/engine.ts';
import { silentLogger } from '../src/logger.ts';
import { StreamWorker } from '../src/stream/stream-worker.ts';
import { defaultCacheDir, startKafka } from '../scripts/services/kafka-local.ts';
import { freePort } from '../scripts/services/process-control.ts';
import { KafkaKit } from '../test/integration/helpers/kafka-kit.ts';

const ROOT = join(import.meta.dirname, '..');
const { values } = parseArgs({ options: { records: { type: 'string', default: '2000' } } });
const count = Number(values.records);
const WARMUP = 64;
const started = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
};

const corpusFile = join(ROOT, '.cache', 'corpus', 'spam-assassin.jsonl');
if (!existsSync(corpusFile)) throw new Error(`${corpusFile} is missing: run npm run corpus:build`);
const corpus = readFileSync(corpusFile, 'utf8')
  .split('\n')
  .filter((l) => l.trim() !== '')
  .map((l) => JSON.parse(l) as { id: string; text: string });
const pick = (n: number, from: number) =>
  Array.from({ length: n }, (_, i) => corpus[(from + i) % corpus.length] as { text: string });
const records = pick(count, 0).map((r, i) => ({ id: `r${i}`, text: r.text }));
const warmup = pick(WARMUP, 3000).map((r, i) => ({ id: `w${i}`, text: r.text }));

const fp32 = join(ROOT, '.cache', 'models', 'all-MiniLM-L6-v2');
const modelPath = existsSync(join(fp32, 'model.onnx'))
  ? fp32
  : join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const pipeline = {
  task: 'featureExtraction',
  model: 'minilm',
  options: { normalize: true, maxLength: 256 },
};
log(`model ${modelPath}, ${count} records`);

// 1. In-process: every record submitted at once to a warmed engine.
const engine = await Engine.start({
  models: { minilm: { path: modelPath } },
  pipelines: { embed: pipeline },
});
await Promise.all(warmup.map((r) => engine.submit('embed', r.text)));
let t = performance.now();
await Promise.all(records.map((r) => engine.submit('embed', r.text)));
const inProcessSeconds = (performance.now() - t) / 1000;
await engine.close('drain');
log(`in-process: ${(count / inProcessSeconds).toFixed(1)} records/s`);

// 2. Kafka -> worker -> Kafka on the same records.
let brokers = process.env['KAFKA_BROKERS'];
let stopKafka = (): Promise<void> => Promise.resolve();
if (brokers === undefined || brokers === '') {
  const port = await freePort();
  const kafka = await startKafka({
    cacheDir: defaultCacheDir(),
    port,
    dataDir: join(defaultCacheDir(), 'services', `kafka-bench-${port}`),
  });
  brokers = kafka.brokers.join(',');
  stopKafka = kafka.stop;
  log(`started Kafka at ${brokers}`);
}
const kit = new KafkaKit(brokers);
const suffix = Math.random().toString(36).slice(2, 8);
const input = `bench-e2e-in-${suffix}`;
const output = `bench-e2e-out-${suffix}`;
const groupId = `bench-e2e-${suffix}`;
const PARTITIONS = 4;
await kit.createTopics([
  { topic: input, partitions: PARTITIONS },
  { topic: output, partitions: PARTITIONS },
]);
const toMessages = (rs: { id: string; text: string }[]) =>
  rs.map((r, i) => ({ partition: i % PARTITIONS, key: r.id, value: JSON.stringify(r) }));
const outputCount = async (): Promise<number> => {
  let total = 0;
  for (const high of (await kit.endOffsets(output)).values()) total += Number(high);
  return total;
};
const waitForOutputs = async (n: number): Promise<void> => {
  while ((await outputCount()) < n) await new Promise((r) => setTimeout(r, 50));
};

await kit.produce(input, toMessages(warmup));
const config = configSchema.parse({
  models: { minilm: { path: modelPath } },
  pipelines: { embed: pipeline },
  routes: [
    {
      name: 'embed',
      source: { type: 'kafka', topic: input, groupId },
      pipeline: 'embed',
      output: { mode: 'merge', field: 'embedding' },
      sink: { type: 'kafka', topic: output },
    },
  ],
  connections: { kafka: { brokers: brokers.split(',') } },
});
const worker = await StreamWorker.start(config, { logger: silentLogger });
await waitForOutputs(WARMUP);
t = performance.now();
await kit.produce(input, toMessages(records));
await waitForOutputs(WARMUP + count);
const e2eSeconds = (performance.now() - t) / 1000;
await worker.stop(60_000);
log(`kafka e2e: ${(count / e2eSeconds).toFixed(1)} records/s`);

const outputs = await kit.readAll(output, { count: WARMUP + count, quietMs: 1000 });
const seen = new Map<string, number>();
for (const o of outputs) {
  const id = (JSON.parse(o.value.toString('utf8')) as { id: string }).id;
  seen.set(id, (seen.get(id) ?? 0) + 1);
}
const lost = records.filter((r) => !seen.has(r.id)).length;
let duplicates = 0;
for (const n of seen.values()) duplicates += n - 1;
await stopKafka();

const ratio = inProcessSeconds / e2eSeconds;
log(
  `in-process ${inProcessSeconds.toFixed(2)} s, kafka e2e ${e2eSeconds.toFixed(2)} s, ratio ${ratio.toFixed(3)}`,
);
process.stdout.write(
  `${JSON.stringify({ bench: 'e2e', ratios: { vs_in_process: Math.round(ratio * 1000) / 1000 }, records: count, lost, duplicates })}\n`,
);
