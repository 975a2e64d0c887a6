// Shared by the BullMQ and Redis Streams integration tests: a worker config around the tiny
// text-classification model, real corpus records with ids, and reference results from the
// in-process API to check the stream worker's outputs against.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { configSchema, type WorkerConfig } from '../../src/config/schema.ts';
import { createHugot } from '../../src/hugot.ts';
import type { Logger } from '../../src/logger.ts';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, expect } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
export const CLS_MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-text-classification');
export const SCRIPTED_WORKER = join(ROOT, 'test', 'fixtures', 'workers', 'scripted-worker.ts');

export interface CorpusRecord {
  id: string;
  text: string;
  label: string;
}

const sample = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as CorpusRecord);

/** `count` real e-mail texts, the sample repeated, each with a unique id. */
export function corpusRecords(count: number): CorpusRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const base = sample[i % sample.length];
    if (base === undefined) throw new Error('the corpus sample is empty');
    return { id: `r${i}`, text: base.text, label: base.label };
  });
}

/** What the in-process API answers for each text (the stream worker must agree). */
export async function referenceResults(texts: readonly string[]): Promise<unknown[]> {
  const hugot = createHugot();
  try {
    hugot.registerModel('cls', { path: CLS_MODEL });
    await hugot.registerPipeline('classify', { task: 'textClassification', model: 'cls' });
    return await hugot.run('classify', texts);
  } finally {
    await hugot.close();
  }
}

/** A one-route worker config over the tiny classifier; `route` supplies source, sink and dlq. */
export function workerConfig(
  redisUrl: string,
  route: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): WorkerConfig {
  return configSchema.parse({
    models: { cls: { path: CLS_MODEL } },
    pipelines: { classify: { task: 'textClassification', model: 'cls' } },
    routes: [{ name: 'classify', pipeline: 'classify', ...route }],
    shards: [{ device: 'cpu', threads: 2 }],
    batching: { maxBatchSize: 64, maxWaitMs: 5 },
    connections: { redis: { url: redisUrl } },
    ...extra,
  });
}

export type ClassifiedRecord = CorpusRecord & { result: { label: string; score: number }[] };

/**
 * Every record came out exactly once and carries its own fields and the in-process pipeline's
 * answer for its text. The records repeat a few distinct texts, so the reference runs once per
 * text and every record is checked, not a sample.
 */
export async function expectEveryRecordClassified(
  records: readonly CorpusRecord[],
  outputs: readonly ClassifiedRecord[],
): Promise<void> {
  const ids = new Set(outputs.map((o) => o.id));
  expect(ids.size).toBe(records.length);
  expect(records.every((r) => ids.has(r.id))).toBe(true);

  const texts = [...new Set(records.map((r) => r.text))];
  const results = await referenceResults(texts);
  const expected = new Map(texts.map((text, i) => [text, results[i]]));
  const byId = new Map(outputs.map((o) => [o.id, o]));
  const wrong = records.filter((record) => {
    const out = byId.get(record.id);
    return (
      out?.text !== record.text ||
      out.label !== record.label ||
      !sameScores(out.result, expected.get(record.text))
    );
  });
  expect(wrong.map((r) => r.id)).toEqual([]);
}

/** Compares classifier outputs with a tolerance: batch mates change padding, not the answer. */
export function sameScores(actual: unknown, expected: unknown): boolean {
  const a = actual as { label: string; score: number }[];
  const e = expected as { label: string; score: number }[];
  return (
    Array.isArray(a) &&
    Array.isArray(e) &&
    a.length === e.length &&
    a.every((x, i) => x.label === e[i]?.label && Math.abs(x.score - (e[i]?.score ?? NaN)) < 1e-4)
  );
}

export interface RecordingLogger extends Logger {
  errors: string[];
}

export function recordingLogger(): RecordingLogger {
  const errors: string[] = [];
  return {
    errors,
    debug: () => undefined,
    info: () => undefined,
    warn: () => undefined,
    error: (fields, message) => errors.push(`${message} ${JSON.stringify(fields)}`),
  };
}

/**
 * What a test opened, closed after it, newest first. The returned array is pushed to by the
 * test; an afterEach empties it.
 */
export function useClosers(): (() => Promise<unknown>)[] {
  const closers: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
  });
  return closers;
}

/** A BullMQ queue on its own connection, closed with the test's other resources. */
export function openQueue(
  redisUrl: string,
  name: string,
  closers: (() => Promise<unknown>)[],
): Queue {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection });
  closers.push(async () => {
    await queue.close();
    await connection.quit();
  });
  return queue;
}
