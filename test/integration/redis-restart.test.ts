// Redis, the source and sink of a Redis Streams route, stops under load and comes back with its
// append-only file: the worker process rides the outage out by itself, every entry gets its
// output, and it still drains and exits 0 on SIGTERM. Its own Redis (not the suite's shared one),
// because this test stops it.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { fillStream, redisClient, StreamReader } from '../chaos/redis-tools.ts';
import { CLS_MODEL, corpusRecords } from '../helpers/redis-routes.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';
import { stoppableRedis } from './helpers/stoppable-redis.ts';

const RECORDS = 1_500;
/** Long enough for the worker's reads, acks and writes to fail and back off several times. */
const OUTAGE_MS = 8_000;

const redis = stoppableRedis('redis-restart');

describe('a Redis restart under load (real Redis, real worker process)', () => {
  it('loses nothing: every entry is written once Redis is back, and the worker drains', async () => {
    const url = redis.url();
    const client = redisClient(url);
    const input = uniqueName('in');
    const output = uniqueName('out');
    const records = corpusRecords(RECORDS);
    await fillStream(
      client,
      input,
      records.map((r) => ({ key: r.id, value: JSON.stringify(r) })),
    );
    const reader = new StreamReader(output);
    const worker = startWorkerProcess({
      models: { cls: { path: CLS_MODEL } },
      pipelines: { classify: { task: 'textClassification', model: 'cls' } },
      routes: [
        {
          name: 'classify',
          pipeline: 'classify',
          source: { type: 'redis-stream', stream: input, group: 'restart', claimIdleMs: 10_000 },
          sink: { type: 'redis-stream', stream: output },
          dlq: { type: 'redis-stream', stream: `${output}-dlq` },
        },
      ],
      shards: [{ device: 'cpu', threads: 1 }],
      connections: { redis: { url } },
    });
    const context = (): string => `worker log tail:\n${worker.output().slice(-3000)}`;
    try {
      await waitForProgress(() => reader.poll(client), {
        what: 'outputs before the outage',
        done: (n) => n >= RECORDS * 0.2,
        firstProgressMs: 120_000,
        abort: worker.gone,
        context,
      });
      const before = await reader.poll(client);
      expect(before).toBeLessThan(RECORDS);

      await redis.stop();
      await sleep(OUTAGE_MS);
      expect(worker.gone()).toBeUndefined();
      await redis.start();

      const written = await waitForProgress(() => reader.poll(client), {
        what: 'every entry written after the restart',
        done: (n) => n === RECORDS,
        stallMs: 90_000,
        abort: worker.gone,
        context,
      });
      expect(written).toBe(RECORDS);
      for (const r of records) expect(reader.ids.has(r.id)).toBe(true);
      // The outage is in the log where it began and where it ended.
      const log = worker.output();
      expect(log, context()).toMatch(/outage began: Redis unreachable/);
      expect(log, context()).toMatch(/outage over after \d+ ms \(\d+ reconnect attempts\)/);
      expect(await client.xlen(`${output}-dlq`)).toBe(0);

      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      // Nothing left pending in the group: every entry was acknowledged after its output.
      const pending = (await client.xpending(input, 'restart')) as [number, ...unknown[]];
      expect(pending[0], `pending ${JSON.stringify(pending)}; ${context()}`).toBe(0);
    } finally {
      if (worker.gone() === undefined) worker.child.kill('SIGKILL');
      client.disconnect();
    }
  });
});
