// The BullMQ source and sink end to end: real Redis, the real tiny classifier, real e-mail text.
import { describe, expect, inject, it } from 'vitest';
import type { Queue } from 'bullmq';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import {
  corpusRecords,
  recordingLogger,
  expectEveryRecordClassified,
  workerConfig,
  type ClassifiedRecord,
  type CorpusRecord,
  useClosers,
  openQueue,
} from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { waitForProgress } from '../helpers/progress.ts';

const redisUrl = inject('redisUrl');
const closers = useClosers();

const queueOf = (name: string): Queue => openQueue(redisUrl, name, closers);

async function enqueue(queue: Queue, records: readonly unknown[]): Promise<void> {
  for (let i = 0; i < records.length; i += 1000) {
    await queue.addBulk(records.slice(i, i + 1000).map((data) => ({ name: 'classify', data })));
  }
}

type Output = ClassifiedRecord;

/** Waits while jobs complete, until `count` have; fails when none completes for the stall bound. */
async function completedJobs(queue: Queue, count: number): Promise<void> {
  await waitForProgress(async () => (await queue.getJobCounts('completed'))['completed'] ?? 0, {
    what: `${count.toLocaleString('en')} completed jobs`,
    done: (n) => n >= count,
  });
}

async function outputsOf(queue: Queue, expected: number): Promise<Output[]> {
  const jobs = await queue.getJobs(['waiting'], 0, expected + 100);
  return jobs.map((job) => job.data as Output);
}

describe('BullMQ source -> BullMQ sink (real Redis)', () => {
  it('classifies 10,000 jobs: every id once, results as the in-process API, all completed', async () => {
    const input = queueOf(uniqueName('in'));
    const output = queueOf(uniqueName('out'));
    const dlq = queueOf(uniqueName('dlq'));
    const records = corpusRecords(10_000);
    await enqueue(input, records);
    const logger = recordingLogger();
    const started = performance.now();
    const worker = await StreamWorker.start(
      workerConfig(redisUrl, {
        source: { type: 'bullmq', queue: input.name, concurrency: 256 },
        sink: { type: 'bullmq', queue: output.name },
        dlq: { type: 'bullmq', queue: dlq.name },
      }),
      { logger },
    );
    closers.push(() => worker.stop(20_000));
    await completedJobs(input, records.length);
    const seconds = (performance.now() - started) / 1000;
    await worker.stop(20_000);
    process.stdout.write(
      `[bullmq] 10,000 jobs in ${seconds.toFixed(1)} s (${Math.round(10_000 / seconds)}/s)\n`,
    );

    expect(await input.getJobCounts('completed', 'failed', 'active', 'waiting')).toMatchObject({
      completed: 10_000,
      failed: 0,
      active: 0,
      waiting: 0,
    });
    expect(await dlq.count()).toBe(0);
    const outputs = await outputsOf(output, records.length);
    expect(outputs).toHaveLength(10_000);
    await expectEveryRecordClassified(records, outputs);

    // The job's return value is the same output (what a 'bullmq-result' route hands back).
    const job = await input.getJob((await input.getJobs(['completed'], 0, 0))[0]?.id ?? '');
    const returned = job?.returnvalue as Output;
    const data = job?.data as CorpusRecord;
    expect(returned.id).toBe(data.id);
    expect(returned.result).toEqual(outputs.find((o) => o.id === data.id)?.result);
    expect(logger.errors).toEqual([]);
  });

  it('two workers on one queue share the jobs with none lost or repeated', async () => {
    const input = queueOf(uniqueName('in'));
    const output = queueOf(uniqueName('out'));
    const records = corpusRecords(2_000);
    const route = {
      source: { type: 'bullmq', queue: input.name, concurrency: 64 },
      sink: { type: 'bullmq', queue: output.name },
    };
    const extra = { shards: [{ device: 'cpu', threads: 1 }] };
    const a = await StreamWorker.start(workerConfig(redisUrl, route, extra), {
      logger: recordingLogger(),
    });
    closers.push(() => a.stop(20_000));
    const b = await StreamWorker.start(workerConfig(redisUrl, route, extra), {
      logger: recordingLogger(),
    });
    closers.push(() => b.stop(20_000));
    await enqueue(input, records);
    await completedJobs(input, records.length);
    await Promise.all([a.stop(20_000), b.stop(20_000)]);

    const shares = [a, b].map((w) => w.counters()['classify']?.written ?? 0);
    expect(shares[0]).toBeGreaterThan(0);
    expect(shares[1]).toBeGreaterThan(0);
    expect((shares[0] ?? 0) + (shares[1] ?? 0)).toBe(2_000);
    const outputs = await outputsOf(output, records.length);
    expect(new Set(outputs.map((o) => o.id)).size).toBe(2_000);
    expect(outputs).toHaveLength(2_000);
    expect(await input.getJobCounts('failed')).toEqual({ failed: 0 });
  });

  it('pauses on the batcher’s pressure signal and resumes: every job still completes', async () => {
    const input = queueOf(uniqueName('in'));
    const records = corpusRecords(1_000);
    await enqueue(input, records);
    const worker = await StreamWorker.start(
      workerConfig(
        redisUrl,
        {
          source: { type: 'bullmq', queue: input.name, concurrency: 128 },
          sink: { type: 'bullmq-result' },
        },
        // A queue far smaller than the concurrency: the source is told to pause again and again.
        { batching: { maxBatchSize: 8, maxWaitMs: 2, maxQueued: 16 } },
      ),
      { logger: recordingLogger() },
    );
    closers.push(() => worker.stop(20_000));
    await completedJobs(input, records.length);
    await worker.stop(20_000);
    expect(await input.getJobCounts('failed', 'active', 'waiting')).toMatchObject({
      failed: 0,
      active: 0,
      waiting: 0,
    });
    const done = await input.getJobs(['completed'], 0, 2_000);
    expect(new Set(done.map((j) => (j.returnvalue as Output).id)).size).toBe(1_000);
  });
});
