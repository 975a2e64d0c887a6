// npm run bench:e2e — Kafka -> featureExtraction (all-MiniLM-L6-v2) -> Kafka through the stream
// worker, against the in-process API (BatchEngine.submit) on the same spam-assassin records in the
// same run. Uses KAFKA_BROKERS or starts its own local broker. Ends with one JSON line:
// {"bench":"e2e","ratios":{"vs_in_process":R,"telemetry_on_vs_off":T},"records":N,"lost":L,...}
// The Kafka run is repeated with telemetry off and on (metrics scraped every second, every record
// traced to a local OTLP receiver), taking turns; each side keeps its best time.
// Options: --records N (default 2000), --rounds R (default 2), --client platformatic|kafkajs (the
// worker's Kafka client; the config default otherwise).
// --clients instead compares the two clients in one run: telemetry-off passes of each, taking turns
// round by round, then per client and delivery mode two worker processes in one group with one
// leaving by SIGTERM (bench/lib/e2e-sigterm.ts). Its JSON line holds
// "kafka_clients":{"platformatic":R1,"kafkajs":R2} (records/s ratio to in-process, best pass each)
// and "sigterm_one_of_two":{client:{mode:{lost,duplicates,...}}}, with "lost" per client.
// The one-client run ends with an Avro pass (bench/lib/e2e-avro.ts: Avro in, Avro out with a
// derived schema, SCHEMA_REGISTRY_URL or the local registry) whose ratio, lost, duplicates and
// bytes per record are the line's "avro"; --skip-avro leaves it out.
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { configSchema } from '../src/config/schema.ts';
import { BatchEngine } from '../src/engine/batch-engine.ts';
import { silentLogger } from '../src/logger.ts';
import { StreamWorker } from '../src/worker/stream-worker.ts';
import { Telemetry } from '../src/telemetry/telemetry.ts';
import { freePort } from '../scripts/services/process-control.ts';
import { KafkaKit } from '../test/integration/helpers/kafka-kit.ts';
import { parseE2eArgs, type KafkaClientName } from './lib/e2e-args.ts';
import { sigtermPass, type DeliveryMode, type SigtermOutcome } from './lib/e2e-sigterm.ts';
import { avroPass, benchRegistry, type AvroPass } from './lib/e2e-avro.ts';
import { writeResultLine } from './lib/run-record.ts';
import { benchKafka } from './lib/bench-kafka.ts';

const ROOT = join(import.meta.dirname, '..');
const { records: count, rounds, client, clients, avro } = parseE2eArgs(process.argv.slice(2));
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
const engine = await BatchEngine.start({
  models: { minilm: { path: modelPath } },
  pipelines: { embed: pipeline },
});
await Promise.all(warmup.map((r) => engine.submit('embed', r.text)));
const t = performance.now();
await Promise.all(records.map((r) => engine.submit('embed', r.text)));
const inProcessSeconds = (performance.now() - t) / 1000;
await engine.close('drain');
log(`in-process: ${(count / inProcessSeconds).toFixed(1)} records/s`);

// 2. Kafka -> worker -> Kafka on the same records.
const { brokers: brokerList, stop: stopKafka } = await benchKafka(log);
const kit = new KafkaKit(brokerList);
const PARTITIONS = 4;
const toMessages = (rs: { id: string; text: string }[]) =>
  rs.map((r, i) => ({ partition: i % PARTITIONS, key: r.id, value: JSON.stringify(r) }));

// What an operator's stack does to a worker with telemetry on: Prometheus scrapes /metrics every
// second, and spans go to an OTLP receiver (this one only counts what it gets).
const receiver = createServer((req, res) => {
  let bytes = 0;
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    otlpRequests += 1;
    otlpBytes += bytes;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
});
let otlpRequests = 0;
let otlpBytes = 0;
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverPort = (receiver.address() as AddressInfo).port;

interface Pass {
  telemetry: boolean;
  client: KafkaClientName | undefined;
  seconds: number;
  lost: number;
  duplicates: number;
  scrapes: number;
}

const connection = (passClient: KafkaClientName | undefined) => ({
  brokers: brokerList.split(','),
  ...(passClient !== undefined ? { client: passClient } : {}),
});

async function kafkaPass(
  telemetryOn: boolean,
  passClient: KafkaClientName | undefined,
): Promise<Pass> {
  const suffix = Math.random().toString(36).slice(2, 8);
  const input = `bench-e2e-in-${suffix}`;
  const output = `bench-e2e-out-${suffix}`;
  await kit.createTopics([
    { topic: input, partitions: PARTITIONS },
    { topic: output, partitions: PARTITIONS },
  ]);
  const outputCount = async (): Promise<number> => {
    let total = 0;
    for (const high of (await kit.endOffsets(output)).values()) total += Number(high);
    return total;
  };
  const waitForOutputs = async (n: number): Promise<void> => {
    while ((await outputCount()) < n) await new Promise((r) => setTimeout(r, 50));
  };
  const metricsPort = await freePort();
  const config = configSchema.parse({
    models: { minilm: { path: modelPath } },
    pipelines: { embed: pipeline },
    routes: [
      {
        name: 'embed',
        source: { type: 'kafka', topic: input, groupId: `bench-e2e-${suffix}` },
        pipeline: 'embed',
        output: { mode: 'merge', field: 'embedding' },
        sink: { type: 'kafka', topic: output },
      },
    ],
    connections: { kafka: connection(passClient) },
    telemetry: {
      enabled: telemetryOn,
      port: metricsPort,
      host: '127.0.0.1',
      lagIntervalMs: 1000,
      statsIntervalMs: 0,
      tracing: { endpoint: `http://127.0.0.1:${receiverPort}/v1/traces` },
    },
  });
  await kit.produce(input, toMessages(warmup));
  const telemetry = await Telemetry.start(config.telemetry, silentLogger);
  const worker = await StreamWorker.start(config, {
    logger: silentLogger,
    telemetry: telemetry.forWorker(silentLogger),
  });
  let scrapes = 0;
  const scraper = telemetryOn
    ? setInterval(() => {
        fetch(`http://127.0.0.1:${metricsPort}/metrics`)
          .then(async (r) => {
            await r.text();
            if (r.ok) scrapes += 1;
          })
          .catch(() => undefined);
      }, 1000)
    : undefined;
  await waitForOutputs(WARMUP);
  const t0 = performance.now();
  await kit.produce(input, toMessages(records));
  await waitForOutputs(WARMUP + count);
  const seconds = (performance.now() - t0) / 1000;
  if (scraper !== undefined) clearInterval(scraper);
  await worker.stop(60_000);
  await telemetry.close();

  const outputs = await kit.readAll(output, { count: WARMUP + count, quietMs: 1000 });
  const seen = new Map<string, number>();
  for (const o of outputs) {
    const id = (JSON.parse(o.value.toString('utf8')) as { id: string }).id;
    seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  const lost = records.filter((r) => !seen.has(r.id)).length;
  let duplicates = 0;
  for (const n of seen.values()) duplicates += n - 1;
  log(
    `kafka e2e${passClient !== undefined ? ` (${passClient})` : ''}, telemetry ${telemetryOn ? 'on' : 'off'}: ${(count / seconds).toFixed(1)} records/s` +
      (telemetryOn ? ` (${scrapes} scrapes, ${otlpRequests} OTLP requests so far)` : ''),
  );
  return { telemetry: telemetryOn, client: passClient, seconds, lost, duplicates, scrapes };
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

if (clients.length > 0) {
  await compareClients();
  process.exit(0);
}

// Off and on take turns so that drift in the machine's load hits both; each side keeps its best.
const passes: Pass[] = [];
for (let round = 0; round < rounds; round += 1) {
  passes.push(await kafkaPass(false, client));
  passes.push(await kafkaPass(true, client));
}
// Avro in, Avro out with a derived schema: the best of `rounds` passes, telemetry off.
const avroPasses: AvroPass[] = [];
if (avro) {
  const registry = await benchRegistry();
  try {
    for (let round = 0; round < rounds; round += 1)
      avroPasses.push(
        await avroPass({
          kit,
          registryUrl: registry.url,
          modelPath,
          pipeline,
          records,
          warmup,
          partitions: PARTITIONS,
          connection: connection(client),
          log,
        }),
      );
  } finally {
    await registry.stop();
  }
}
receiver.close();
const best = (on: boolean): number =>
  Math.min(...passes.filter((p) => p.telemetry === on).map((p) => p.seconds));
const e2eSeconds = best(false);
const telemetrySeconds = best(true);
const lost = passes.reduce((n, p) => n + p.lost, 0);
const duplicates = passes.reduce((n, p) => n + p.duplicates, 0);
await stopKafka();

const ratio = inProcessSeconds / e2eSeconds;
const telemetryRatio = e2eSeconds / telemetrySeconds;
log(
  `in-process ${inProcessSeconds.toFixed(2)} s, kafka e2e ${e2eSeconds.toFixed(2)} s (telemetry on ${telemetrySeconds.toFixed(2)} s), ratio ${ratio.toFixed(3)}, telemetry on/off ${telemetryRatio.toFixed(3)}`,
);
writeResultLine({
  bench: 'e2e',
  ratios: { vs_in_process: round3(ratio), telemetry_on_vs_off: round3(telemetryRatio) },
  records: count,
  rounds,
  kafka_client: client ?? 'default',
  passes: passes.map((p) => ({
    telemetry: p.telemetry,
    seconds: round3(p.seconds),
    scrapes: p.scrapes,
  })),
  otlp: { requests: otlpRequests, bytes: otlpBytes },
  lost,
  duplicates,
  ...(avroPasses.length > 0
    ? {
        avro: {
          vs_in_process: round3(inProcessSeconds / Math.min(...avroPasses.map((p) => p.seconds))),
          lost: avroPasses.reduce((n, p) => n + p.lost, 0),
          duplicates: avroPasses.reduce((n, p) => n + p.duplicates, 0),
          bytes_per_record: avroPasses[0]?.bytesPerRecord,
        },
      }
    : {}),
});

/**
 * --clients: each client's telemetry-off passes, the first client changing every round so that
 * drift in the machine's load hits both; then per delivery mode one two-worker SIGTERM pass per
 * client (again taking turns). Ends with the JSON line of the comparison.
 */
async function compareClients(): Promise<void> {
  const passes: Pass[] = [];
  const modes: DeliveryMode[] = ['at-least-once', 'exactly-once'];
  const sigterm = new Map<KafkaClientName, Map<DeliveryMode, SigtermOutcome>>();
  // A failed wait must not leave the benchmark's broker running.
  try {
    for (let round = 0; round < rounds; round += 1) {
      const order = round % 2 === 0 ? clients : [...clients].reverse();
      for (const c of order) passes.push(await kafkaPass(false, c));
    }
    for (const [i, mode] of modes.entries()) {
      const order = i % 2 === 0 ? clients : [...clients].reverse();
      for (const c of order) {
        const outcome = await sigtermPass({
          kit,
          client: c,
          mode,
          records,
          partitions: PARTITIONS,
          workerConfig: sigtermWorkerConfig,
          log,
        });
        sigterm.set(
          c,
          (sigterm.get(c) ?? new Map<DeliveryMode, SigtermOutcome>()).set(mode, outcome),
        );
      }
    }
  } finally {
    receiver.close();
    await stopKafka();
  }

  const ratios: Record<string, number> = {};
  const lost: Record<string, number> = {};
  const duplicates: Record<string, number> = {};
  const sigtermJson: Record<string, Record<string, unknown>> = {};
  for (const c of clients) {
    const own = passes.filter((p) => p.client === c);
    ratios[c] = round3(inProcessSeconds / Math.min(...own.map((p) => p.seconds)));
    const outcomes = [...(sigterm.get(c) ?? new Map<DeliveryMode, SigtermOutcome>())];
    lost[c] = own.reduce((n, p) => n + p.lost, 0) + outcomes.reduce((n, [, o]) => n + o.lost, 0);
    duplicates[c] = own.reduce((n, p) => n + p.duplicates, 0);
    sigtermJson[c] = Object.fromEntries(
      outcomes.map(([mode, o]) => [
        mode,
        {
          lost: o.lost,
          duplicates: o.duplicates,
          shared: o.shared,
          exits: o.exits,
          seconds: round3(o.seconds),
        },
      ]),
    );
  }
  log(
    `in-process ${inProcessSeconds.toFixed(2)} s; ratio to in-process ${clients.map((c) => `${c} ${ratios[c]}`).join(', ')}`,
  );
  writeResultLine({
    bench: 'e2e',
    kafka_clients: ratios,
    sigterm_one_of_two: sigtermJson,
    lost,
    throughput_duplicates: duplicates,
    records: count,
    rounds,
    in_process_seconds: round3(inProcessSeconds),
    passes: passes.map((p) => ({ client: p.client, seconds: round3(p.seconds) })),
  });
}

/** The child workers of a SIGTERM pass: the benchmark's route, no telemetry, a chosen mode. */
function sigtermWorkerConfig(route: {
  input: string;
  output: string;
  groupId: string;
  client: KafkaClientName;
  mode: DeliveryMode;
}): Record<string, unknown> {
  return {
    models: { minilm: { path: modelPath } },
    pipelines: { embed: pipeline },
    routes: [
      {
        name: 'embed',
        source: { type: 'kafka', topic: route.input, groupId: route.groupId },
        pipeline: 'embed',
        output: { mode: 'merge', field: 'embedding' },
        sink: { type: 'kafka', topic: route.output },
      },
    ],
    connections: { kafka: connection(route.client) },
    delivery: { mode: route.mode },
  };
}
