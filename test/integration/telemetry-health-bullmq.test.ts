// A BullMQ route in a real worker process against a Redis of its own: a job's traceparent
// continues through the worker into the output job's data, and when Redis is gone for longer
// than telemetry.health.sourceOutageMs the source's reconnects turn /livez red and the process
// exits 1 instead of staying up consuming nothing.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultCacheDir } from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { startRedis, type LocalRedis } from '../../scripts/services/redis-local.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { CLS_MODEL, corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { startOtlpReceiver, type OtlpReceiver } from './helpers/otlp-receiver.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const OUTAGE_MS = 3_000;
const JOBS = 10;

let redis: LocalRedis;
let receiver: OtlpReceiver;

beforeAll(async () => {
  const port = await freePort();
  redis = await startRedis({
    port,
    dataDir: join(defaultCacheDir(), 'services', `redis-health-${port}`),
  });
  receiver = await startOtlpReceiver();
});

afterAll(async () => {
  await redis.stop();
  await receiver.close();
});

async function status(port: number, path: string): Promise<number | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`, {
      // Only a guard against a request that hangs: a loaded machine may answer slowly, and a
      // slow answer is still an answer.
      signal: AbortSignal.timeout(30_000),
    });
    await response.body?.cancel();
    return response.status;
  } catch {
    return undefined;
  }
}

describe('BullMQ source health and trace context', () => {
  it('output jobs carry the trace; Redis gone past the bound: /livez red, exit 1', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    const inQueue = new Queue(input, { connection });
    const outQueue = new Queue(output, { connection });
    const traceId = randomBytes(16).toString('hex');
    const records = corpusRecords(JOBS);
    await inQueue.addBulk(
      records.map((r) => ({
        name: 'classify',
        data: { ...r, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
      })),
    );
    const port = await freePort();
    const worker = startWorkerProcess({
      models: { cls: { path: CLS_MODEL } },
      pipelines: { classify: { task: 'textClassification', model: 'cls' } },
      routes: [
        {
          name: 'classify',
          pipeline: 'classify',
          source: { type: 'bullmq', queue: input },
          sink: { type: 'bullmq', queue: output },
        },
      ],
      shards: [{ device: 'cpu', threads: 1 }],
      batching: { maxBatchSize: 16, maxWaitMs: 5 },
      connections: { redis: { url: redis.url } },
      telemetry: {
        port,
        host: '127.0.0.1',
        tracing: { endpoint: receiver.url },
        health: { sourceOutageMs: OUTAGE_MS },
      },
      shutdown: { timeoutMs: 5_000 },
    });
    try {
      const written = await waitForProgress(() => outQueue.getWaitingCount(), {
        what: 'output jobs',
        done: (n) => n === JOBS,
        stallMs: 120_000,
        abort: worker.gone,
        context: () => worker.output().slice(-3000),
      });
      expect(written).toBe(JOBS);
      const jobs = await outQueue.getWaiting(0, JOBS);
      for (const job of jobs) {
        const data = job.data as { traceparent?: string };
        // The caller's trace, continued: same trace id, a new span (the worker's send span).
        expect(data.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      }
      expect(await status(port, '/readyz')).toBe(200);
      await inQueue.close();
      await outQueue.close();
      connection.disconnect();

      const stoppedAt = performance.now();
      await redis.stop();
      let livezRedAt: number | undefined;
      await waitForProgress(
        async () => {
          const livez = await status(port, '/livez');
          if (livez === 503) livezRedAt ??= performance.now() - stoppedAt;
          return { livez, exited: worker.gone() };
        },
        {
          what: 'the worker to give up on Redis and exit',
          done: (state) => state.exited !== undefined,
          intervalMs: 25,
          stallMs: OUTAGE_MS + 60_000,
          context: () => worker.output().slice(-3000),
        },
      );
      const code = await worker.exited;
      const log = worker.output();
      expect(code, log.slice(-3000)).toBe(1);
      expect(livezRedAt, log.slice(-3000)).toBeGreaterThanOrEqual(OUTAGE_MS);
      expect(log).toMatch(/Redis unreachable \(BullMQ queue/);
    } finally {
      if (worker.gone() === undefined) worker.child.kill('SIGKILL');
      connection.disconnect();
    }
  });
});
