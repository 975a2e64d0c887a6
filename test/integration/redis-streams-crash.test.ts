// A worker process killed with SIGKILL in the middle of a stream: another worker reclaims what
// it left pending, and every input entry ends up with an output (at least once) and acked.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import {
  CLS_MODEL,
  corpusRecords,
  recordingLogger,
  workerConfig,
  type CorpusRecord,
  useClosers,
} from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const redisUrl = inject('redisUrl');
const client = new Redis(redisUrl);
const closers = useClosers();
afterAll(async () => {
  await client.quit();
});

describe('Redis Streams worker killed with SIGKILL (real Redis, real process)', () => {
  it('a second worker reclaims the dead one’s pending entries: no entry lost, none left pending', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const records = corpusRecords(2_000);
    const pipeline = client.pipeline();
    for (const r of records) pipeline.xadd(input, '*', 'value', JSON.stringify(r));
    await pipeline.exec();
    const source = { type: 'redis-stream', stream: input, group: 'classifiers' };
    const route = { source, sink: { type: 'redis-stream', stream: output } };

    const doomed = startWorkerProcess({
      models: { cls: { path: CLS_MODEL } },
      pipelines: { classify: { task: 'textClassification', model: 'cls' } },
      routes: [
        {
          name: 'classify',
          pipeline: 'classify',
          ...route,
          source: { ...source, consumer: 'doomed' },
        },
      ],
      shards: [{ device: 'cpu', threads: 1 }],
      connections: { redis: { url: redisUrl } },
    });
    await waitForProgress(() => client.xlen(output), {
      what: 'the doomed worker to write 300 outputs',
      done: (n) => n >= 300,
      // A fresh process loads the model before its first output.
      firstProgressMs: 120_000,
      abort: doomed.gone,
      context: () => `worker log tail:\n${doomed.output().slice(-3000)}`,
    });
    doomed.child.kill('SIGKILL');
    expect(await doomed.exited).toBe('SIGKILL');
    const written = await client.xlen(output);
    const [pendingOfDoomed] = (await client.xpending(input, 'classifiers')) as [number];
    // Entries read but never acknowledged: what a crash leaves behind.
    expect(pendingOfDoomed).toBeGreaterThan(0);
    expect(written).toBeLessThan(records.length);

    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        ...route,
        source: { ...source, consumer: 'rescuer', claimIdleMs: 1000 },
      }),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    const ids = new Set<string>();
    let seen = '-';
    await waitForProgress(
      async () => {
        const entries = await client.xrange(output, seen === '-' ? '-' : `(${seen}`, '+');
        for (const [id, fields] of entries) {
          seen = id;
          ids.add((JSON.parse(fields[1] ?? '') as CorpusRecord).id);
        }
        return ids.size;
      },
      { what: 'every id in the output', done: (n) => n === records.length },
    );
    await worker.stop(20_000);

    expect(records.every((r) => ids.has(r.id))).toBe(true);
    const [pending] = (await client.xpending(input, 'classifiers')) as [number];
    expect(pending).toBe(0);
    const total = await client.xlen(output);
    // At least once: an entry the dead worker wrote but did not acknowledge is written again.
    const duplicates = total - records.length;
    expect(duplicates).toBeGreaterThanOrEqual(0);
    expect(duplicates).toBeLessThanOrEqual(pendingOfDoomed);
    process.stdout.write(
      `[redis-streams crash] killed after ${written} outputs with ${pendingOfDoomed} pending; ` +
        `${duplicates} written twice after reclaim\n`,
    );
  });
});
