// What the chaos scenarios feed the worker and how they configure it: real e-mail texts with
// unique ids, and worker configs over the tiny fixture models (fast enough for 100,000 records on
// two cores). `embed` gives embedding-sized outputs: one 32-float vector per token, ~8 KB a record.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');
const MODELS = join(ROOT, 'test', 'fixtures', 'models');

const sample = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text);

/** Record `i` of a scenario: JSON bytes with a unique id and a real text. */
export function recordValue(scenario: string, i: number): string {
  return JSON.stringify({
    id: `${scenario}-${i}`,
    text: sample[i % sample.length] ?? 'empty',
    n: i,
  });
}

/** The id inside an output or input record, read without parsing the rest. */
export function idOf(value: Buffer | string | null): string | undefined {
  if (value === null) return undefined;
  const text = typeof value === 'string' ? value : value.toString('utf8');
  return /"id"\s*:\s*"([^"]+)"/.exec(text)?.[1];
}

export type PipelineKind = 'classify' | 'embed';

const pipelines = {
  classify: {
    models: { cls: { path: join(MODELS, 'bert-text-classification') } },
    pipelines: { run: { task: 'textClassification', model: 'cls' } },
  },
  embed: {
    models: { fe: { path: join(MODELS, 'bert-feature-extraction') } },
    // One vector per token, 13 tokens at most: about 8 KB of JSON numbers per output.
    pipelines: {
      run: { task: 'featureExtraction', model: 'fe', options: { pooling: 'none', maxLength: 13 } },
    },
  },
} as const;

export interface RouteOptions {
  pipeline?: PipelineKind;
  source: Record<string, unknown>;
  sink: Record<string, unknown>;
  dlq?: Record<string, unknown>;
  brokers?: string;
  redisUrl?: string;
  mode?: 'at-least-once' | 'exactly-once';
  threads?: number;
  extra?: Record<string, unknown>;
}

/** A one-route worker config (raw, as the YAML file would hold it). */
export function workerConfig(options: RouteOptions): Record<string, unknown> {
  const kind = pipelines[options.pipeline ?? 'classify'];
  const connections: Record<string, unknown> = {};
  if (options.brokers !== undefined) connections['kafka'] = { brokers: options.brokers.split(',') };
  if (options.redisUrl !== undefined) connections['redis'] = { url: options.redisUrl };
  return {
    ...kind,
    routes: [
      {
        name: 'chaos',
        source: options.source,
        pipeline: 'run',
        sink: options.sink,
        ...(options.dlq !== undefined ? { dlq: options.dlq } : {}),
      },
    ],
    shards: [{ device: 'cpu', threads: options.threads ?? 1 }],
    batching: { maxBatchSize: 32, maxWaitMs: 5 },
    connections,
    delivery: { mode: options.mode ?? 'at-least-once', commitIntervalMs: 200 },
    ...options.extra,
  };
}

/** A Kafka source in a group, with a session short enough that a killed member leaves fast. */
export function kafkaSource(
  topic: string,
  groupId: string,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    type: 'kafka',
    topic,
    groupId,
    sessionTimeoutMs: 6_000,
    heartbeatIntervalMs: 1_000,
    ...extra,
  };
}
