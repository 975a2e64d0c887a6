// Redis Streams recovery: entries a dead consumer left pending are reclaimed (XAUTOCLAIM) and
// processed by a live worker, and an entry delivered too often goes to the DLQ unprocessed.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import {
  corpusRecords,
  recordingLogger,
  workerConfig,
  type CorpusRecord,
  useClosers,
} from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { waitForProgress, type ProgressOptions } from '../helpers/progress.ts';

const redisUrl = inject('redisUrl');
const client = new Redis(redisUrl);
const closers = useClosers();
afterAll(async () => {
  await client.quit();
});

const GROUP = 'classifiers';

async function append(stream: string, values: readonly string[]): Promise<string[]> {
  const pipeline = client.pipeline();
  for (const value of values) pipeline.xadd(stream, '*', 'value', value);
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([, id]) => id as string);
}

/** A fresh input stream holding `count` corpus records, with the group created; a fresh output. */
async function seededInput(
  count: number,
): Promise<{ input: string; output: string; records: CorpusRecord[] }> {
  const input = uniqueName('in');
  const records = corpusRecords(count);
  await client.xgroup('CREATE', input, GROUP, '0', 'MKSTREAM');
  await append(
    input,
    records.map((r) => JSON.stringify(r)),
  );
  return { input, output: uniqueName('out'), records };
}

/** What a consumer that crashed after reading looks like to Redis: entries pending on its name. */
async function readAndDie(stream: string, consumer: string, count: number): Promise<string[]> {
  const reply = (await client.xreadgroup(
    'GROUP',
    GROUP,
    consumer,
    'COUNT',
    count,
    'STREAMS',
    stream,
    '>',
  )) as [string, [string, string[]][]][] | null;
  return (reply?.[0]?.[1] ?? []).map(([id]) => id);
}

async function pendingOf(stream: string): Promise<[string, string, number, number][]> {
  return (await client.xpending(stream, GROUP, '-', '+', 1000)) as [
    string,
    string,
    number,
    number,
  ][];
}

/** Waits while entries reach `stream`, until it holds `count`. */
async function streamLength(
  stream: string,
  count: number,
  options: Partial<ProgressOptions<number>> = {},
): Promise<void> {
  await waitForProgress(() => client.xlen(stream), {
    what: `${count} entries in ${stream}`,
    done: (n) => n >= count,
    ...options,
  });
}

function valuesOf(entries: [string, string[]][]): Record<string, string>[] {
  return entries.map(([, fields]) => {
    const map: Record<string, string> = {};
    for (let i = 0; i + 1 < fields.length; i += 2) map[fields[i] ?? ''] = fields[i + 1] ?? '';
    return map;
  });
}

describe('Redis Streams reclaim (real Redis)', () => {
  it('a live worker takes over what a dead consumer left pending, and loses nothing', async () => {
    const { input, output, records } = await seededInput(600);
    const orphaned = await readAndDie(input, 'crashed-worker', 250);
    expect(orphaned).toHaveLength(250);

    const logger = recordingLogger();
    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        source: {
          type: 'redis-stream',
          stream: input,
          group: GROUP,
          consumer: 'live-worker',
          claimIdleMs: 500,
        },
        sink: { type: 'redis-stream', stream: output },
      }),
      { logger },
    );
    closers.push(() => worker.stop(20_000));
    await streamLength(output, records.length);
    await worker.stop(20_000);

    expect(await pendingOf(input)).toEqual([]);
    const outputs = valuesOf(await client.xrange(output, '-', '+')).map(
      (v) => JSON.parse(v['value'] ?? '') as CorpusRecord,
    );
    expect(outputs).toHaveLength(600);
    expect(new Set(outputs.map((o) => o.id)).size).toBe(600);
    // The orphaned ids are among the outputs: the first 250 records were the dead consumer's.
    const ids = new Set(outputs.map((o) => o.id));
    expect(records.slice(0, 250).every((r) => ids.has(r.id))).toBe(true);
    const consumers = (await client.xinfo('CONSUMERS', input, GROUP)) as unknown[][];
    const names = consumers.map((c) => c[1]);
    expect(names).toContain('live-worker');
    expect(logger.errors).toEqual([]);
  });

  it('an entry delivered more than maxDeliveries times goes to the DLQ, unprocessed', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const dlq = uniqueName('dlq');
    await client.xgroup('CREATE', input, GROUP, '0', 'MKSTREAM');
    const poison = JSON.stringify({ id: 'poison', text: 'it kills every worker that takes it' });
    const [poisonId] = await append(input, [poison]);
    await readAndDie(input, 'crashed-1', 1);
    // Two more workers took it and died: each claim counts a delivery (3 so far).
    await client.xclaim(input, GROUP, 'crashed-2', 0, poisonId ?? '');
    await client.xclaim(input, GROUP, 'crashed-3', 0, poisonId ?? '');
    expect((await pendingOf(input))[0]?.[3]).toBe(3);
    const good = corpusRecords(100);
    await append(
      input,
      good.map((r) => JSON.stringify(r)),
    );

    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        source: {
          type: 'redis-stream',
          stream: input,
          group: GROUP,
          claimIdleMs: 200,
          maxDeliveries: 3,
        },
        sink: { type: 'redis-stream', stream: output },
        dlq: { type: 'redis-stream', stream: dlq },
      }),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    await waitForProgress(async () => [await client.xlen(dlq), await client.xlen(output)], {
      what: 'the poison entry in the DLQ and 100 outputs',
      done: ([dead, out]) => dead === 1 && out === good.length,
    });
    await worker.stop(20_000);

    expect(await pendingOf(input)).toEqual([]);
    const [letter] = valuesOf(await client.xrange(dlq, '-', '+'));
    expect(letter?.['value']).toBe(poison);
    expect(letter?.['hugot.error.code']).toBe('MAX_DELIVERIES');
    expect(letter?.['hugot.error.message']).toContain('delivered 4 times');
    expect(letter?.['hugot.error.origin.id']).toBe(poisonId);
    const outputs = valuesOf(await client.xrange(output, '-', '+'));
    expect(outputs.some((o) => o['value']?.includes('poison'))).toBe(false);
    expect(worker.counters()['classify']).toMatchObject({ written: 100, deadLettered: 1 });
  });

  it('a worker restarted under the same consumer name first finishes its own pending entries', async () => {
    const { input, output, records } = await seededInput(200);
    // The previous life of 'worker-1' read 120 entries and died; nobody else would claim them
    // for ten minutes.
    expect(await readAndDie(input, 'worker-1', 120)).toHaveLength(120);
    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        source: {
          type: 'redis-stream',
          stream: input,
          group: GROUP,
          consumer: 'worker-1',
          claimIdleMs: 600_000,
        },
        sink: { type: 'redis-stream', stream: output },
      }),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    // Were its own pending entries left to the idle claim, the outputs would stop at 80 for ten
    // minutes: a stall well inside that is the failure, however slow the machine.
    await streamLength(output, records.length, { stallMs: 30_000 });
    await worker.stop(20_000);
    expect(await pendingOf(input)).toEqual([]);
    const ids = valuesOf(await client.xrange(output, '-', '+')).map(
      (v) => (JSON.parse(v['value'] ?? '') as CorpusRecord).id,
    );
    expect(new Set(ids).size).toBe(200);
  });
});
