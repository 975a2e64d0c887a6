// The Redis Streams sink writes through ioredis's auto-pipelining. When a connection closes after
// Redis answered part of a pipeline, ioredis rejects the rest with an AbortError instead of
// sending them again (it cannot tell which of them ran); an output then looked unwritten, its
// entry stayed pending until a reclaim ran it again. Here the sink's connection is cut (CLIENT
// KILL) while thousands of writes are in flight: every write must still resolve.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisStreamSink } from '../../src/connectors/redis/redis-stream-sink.ts';
import { uniqueName } from '../helpers/unique-name.ts';

const url = inject('redisUrl');
const admin = new Redis(url);
afterAll(async () => {
  await admin.quit();
});

const WRITES = 4_000;
const CUTS = 6;

describe('Redis Streams sink, connection cut mid-pipeline (real Redis)', () => {
  it('every write resolves and lands, even when Redis answered only part of a pipeline', async () => {
    const stream = uniqueName('cut-out');
    const sink = new RedisStreamSink({ redis: { url, options: {} }, stream });
    const value = Buffer.alloc(512, 'x');
    try {
      const failures: unknown[] = [];
      for (let cut = 0; cut < CUTS; cut += 1) {
        const before = await admin.xlen(stream);
        const writes = Array.from({ length: WRITES }, (_, i) =>
          sink
            .write({
              value,
              key: Buffer.from(`${cut}-${i}`),
              headers: {},
              origin: { kind: 'redis-stream', stream: 'in', id: `${cut}-${i}` },
            })
            .catch((err: unknown) => failures.push(err)),
        );
        // Let part of the pipeline be answered, then cut the connection under it.
        await waitForEntries(stream, before + 1);
        await admin.client('KILL', 'ID', await sinkClientId(`hugot-stream-sink-${stream}`));
        await Promise.all(writes);
      }
      const first = failures[0] instanceof Error ? failures[0].message : String(failures[0]);
      expect(failures.length, `first failure: ${first}`).toBe(0);
      // The cuts did land inside pipelines that Redis had partly answered.
      expect(sink.retriedAfterCut).toBeGreaterThan(0);
      // At least once: an answered-then-cut write may have landed twice, never zero times.
      const keys = new Set<string>();
      for (const [, fields] of await admin.xrange(stream, '-', '+')) {
        keys.add(fields[fields.indexOf('key') + 1] ?? '');
      }
      expect(keys.size).toBe(WRITES * CUTS);
    } finally {
      await sink.close();
    }
  });
});

/** The suite's Redis is shared: only the sink's own connection is cut. */
async function sinkClientId(name: string): Promise<string> {
  const list = (await admin.client('LIST')) as string;
  const line = list.split('\n').find((l) => l.includes(` name=${name} `));
  const id = /(?:^|\s)id=(\d+)/.exec(line ?? '')?.[1];
  if (id === undefined) throw new Error(`no Redis connection named ${name}`);
  return id;
}

async function waitForEntries(stream: string, atLeast: number): Promise<void> {
  while ((await admin.xlen(stream)) < atLeast) await new Promise((r) => setImmediate(r));
}
