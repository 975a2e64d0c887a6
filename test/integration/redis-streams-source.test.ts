// The Redis Streams source and sink end to end: real Redis, the real tiny classifier, real text.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import {
  corpusRecords,
  recordingLogger,
  expectEveryRecordClassified,
  workerConfig,
  type ClassifiedRecord,
  useClosers,
} from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { waitForProgress } from '../helpers/progress.ts';

const redisUrl = inject('redisUrl');
const client = new Redis(redisUrl);
const closers = useClosers();
afterAll(async () => {
  await client.quit();
});

async function append(stream: string, values: readonly (string | Buffer)[]): Promise<void> {
  for (let i = 0; i < values.length; i += 1000) {
    const pipeline = client.pipeline();
    for (const value of values.slice(i, i + 1000)) pipeline.xadd(stream, '*', 'value', value);
    await pipeline.exec();
  }
}

type Output = ClassifiedRecord;

async function entriesOf(stream: string): Promise<Record<string, string>[]> {
  const entries = await client.xrange(stream, '-', '+');
  return entries.map(([, fields]) => {
    const map: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) map[fields[i] ?? ''] = fields[i + 1] ?? '';
    return map;
  });
}

/** Waits while entries reach `stream`, until it holds `count`. */
async function streamLength(stream: string, count: number): Promise<void> {
  await waitForProgress(() => client.xlen(stream), {
    what: `${count.toLocaleString('en')} entries in ${stream}`,
    done: (n) => n >= count,
  });
}

async function pendingCount(stream: string, group: string): Promise<number> {
  const [count] = (await client.xpending(stream, group)) as [number, ...unknown[]];
  return count;
}

describe('Redis Streams source -> Redis Streams sink (real Redis)', () => {
  it('classifies 10,000 entries: every id once, results as the in-process API, all acked', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const dlq = uniqueName('dlq');
    const records = corpusRecords(10_000);
    await append(
      input,
      records.map((r) => JSON.stringify(r)),
    );
    const logger = recordingLogger();
    const started = performance.now();
    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        source: { type: 'redis-stream', stream: input, group: 'classifiers' },
        sink: { type: 'redis-stream', stream: output },
        dlq: { type: 'redis-stream', stream: dlq },
      }),
      { logger },
    );
    closers.push(() => worker.stop(20_000));
    await streamLength(output, records.length);
    const seconds = (performance.now() - started) / 1000;
    await worker.stop(20_000);
    process.stdout.write(
      `[redis-streams] 10,000 entries in ${seconds.toFixed(1)} s (${Math.round(10_000 / seconds)}/s)\n`,
    );

    expect(await pendingCount(input, 'classifiers')).toBe(0);
    expect(await client.xlen(output)).toBe(10_000);
    expect(await client.xlen(dlq)).toBe(0);
    const outputs = (await entriesOf(output)).map((e) => JSON.parse(e['value'] ?? '') as Output);
    await expectEveryRecordClassified(records, outputs);
    expect(worker.counters()['classify']).toMatchObject({ written: 10_000, deadLettered: 0 });
    expect(logger.errors).toEqual([]);
  });

  it('dead-letters each kind of bad entry with its bytes and reason while good ones flow', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const dlq = uniqueName('dlq');
    const good = corpusRecords(300).map((r) => JSON.stringify(r));
    const invalidUtf8 = Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d]);
    const bad: [code: string, stage: string, value: string | Buffer][] = [
      ['INVALID_JSON', 'decode', '{"id": "bad-json", "text": '],
      ['FIELD_MISSING', 'validate', JSON.stringify({ id: 'no-text', body: 'hello' })],
      ['WRONG_TYPE', 'validate', JSON.stringify({ id: 'number', text: 42 })],
      ['RECORD_TOO_LARGE', 'validate', JSON.stringify({ id: 'big', text: 'x'.repeat(20_000) })],
      ['INVALID_UTF8', 'decode', invalidUtf8],
    ];
    // Bad entries spread through the good ones, so the worker must keep going after each.
    const values: (string | Buffer)[] = [...good];
    bad.forEach(([, , value], i) => values.splice(50 * (i + 1), 0, value));
    await append(input, values);
    // An entry without a `value` field, carrying a header the dead letter must keep.
    const headless = await client.xadd(input, '*', 'body', 'no value here', 'trace', 't-1');

    const worker = await StreamWorker.start(
      workerConfig(
        redisUrl,
        {
          source: { type: 'redis-stream', stream: input, group: 'classifiers' },
          sink: { type: 'redis-stream', stream: output },
          dlq: { type: 'redis-stream', stream: dlq },
        },
        { limits: { maxRecordBytes: 16_384, maxTextLength: 10_000 } },
      ),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    await waitForProgress(async () => (await client.xlen(output)) + (await client.xlen(dlq)), {
      what: 'every entry handled',
      done: (n) => n >= values.length + 1,
    });
    await worker.stop(20_000);

    expect(await client.xlen(output)).toBe(good.length);
    expect(await pendingCount(input, 'classifiers')).toBe(0);
    const inputIds = new Map(
      (await client.xrangeBuffer(input, '-', '+')).map(([id, fields]) => [
        fields[1]?.toString('base64') ?? '',
        id.toString(),
      ]),
    );
    const dead = await client.xrangeBuffer(dlq, '-', '+');
    expect(dead).toHaveLength(bad.length + 1);
    const letters = dead.map(([, fields]) => {
      const map = new Map<string, Buffer>();
      for (let i = 0; i + 1 < fields.length; i += 2) map.set(String(fields[i]), fields[i + 1]!);
      return map;
    });
    const byCode = new Map(letters.map((l) => [l.get('hugot.error.code')?.toString(), l]));
    for (const [code, stage, value] of bad) {
      const letter = byCode.get(code);
      const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value);
      expect(letter?.get('value')?.equals(bytes), code).toBe(true);
      expect(letter?.get('hugot.error.stage')?.toString(), code).toBe(stage);
      expect(letter?.get('hugot.error.message')?.length, code).toBeGreaterThan(10);
      expect(letter?.get('hugot.error.origin.stream')?.toString()).toBe(input);
      expect(letter?.get('hugot.error.origin.id')?.toString()).toBe(
        inputIds.get(bytes.toString('base64')),
      );
    }
    expect(byCode.get('WRONG_TYPE')?.get('hugot.error.message')?.toString()).toContain('number');
    const missing = byCode.get('VALUE_FIELD_MISSING');
    expect(missing?.get('trace')?.toString()).toBe('t-1');
    expect(missing?.get('hugot.error.origin.id')?.toString()).toBe(headless);
    expect(worker.counters()['classify']).toMatchObject({
      written: good.length,
      deadLettered: bad.length + 1,
    });
  });

  it('stops reading under the batcher’s pressure signal and resumes: every entry is handled', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const records = corpusRecords(1_000);
    await append(
      input,
      records.map((r) => JSON.stringify(r)),
    );
    const worker = await StreamWorker.start(
      workerConfig(
        redisUrl,
        {
          source: { type: 'redis-stream', stream: input, group: 'classifiers', count: 64 },
          sink: { type: 'redis-stream', stream: output, maxLength: 100_000 },
        },
        { batching: { maxBatchSize: 8, maxWaitMs: 2, maxQueued: 16 } },
      ),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    await streamLength(output, records.length);
    await worker.stop(20_000);
    expect(await pendingCount(input, 'classifiers')).toBe(0);
    const outputs = (await entriesOf(output)).map((e) => JSON.parse(e['value'] ?? '') as Output);
    expect(new Set(outputs.map((o) => o.id)).size).toBe(1_000);
  });
});
