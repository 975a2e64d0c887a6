import { afterAll, describe, expect, inject, it } from 'vitest';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { waitForProgress } from '../helpers/progress.ts';
import { uniqueName } from '../helpers/unique-name.ts';

const redisUrl = inject('redisUrl');
const connection = (): Redis => new Redis(redisUrl, { maxRetriesPerRequest: null });
const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close();
});

describe('BullMQ (real Redis)', () => {
  it('runs on a Redis that never evicts keys', async () => {
    const client = connection();
    closers.push(() => client.quit());
    const [, policy] = (await client.config('GET', 'maxmemory-policy')) as [string, string];
    expect(policy).toBe('noeviction');
  });

  it('processes enqueued jobs in a Worker and returns their results', async () => {
    const name = uniqueName('smoke-queue');
    const queue = new Queue(name, { connection: connection() });
    const events = new QueueEvents(name, { connection: connection() });
    const worker = new Worker<{ text: string }, { length: number; upper: string }>(
      name,
      (job) =>
        Promise.resolve({ length: job.data.text.length, upper: job.data.text.toUpperCase() }),
      { connection: connection(), concurrency: 4 },
    );
    closers.push(
      () => queue.close(),
      () => events.close(),
      () => worker.close(),
    );
    await events.waitUntilReady();

    const texts = ['hello', 'zürich café', '東京', ''];
    const jobs = await queue.addBulk(texts.map((text) => ({ name: 'enrich', data: { text } })));
    // Each job's own answer, without a per-job total: the wait below bounds the time in which no
    // job finishes, and a failed job rejects this at once.
    const finished = Promise.all(jobs.map((job) => job.waitUntilFinished(events)));
    finished.catch(() => undefined); // read below; not an unhandled rejection meanwhile
    await waitForProgress(
      async () => {
        const counts = await queue.getJobCounts('completed', 'failed');
        return (counts['completed'] ?? 0) + (counts['failed'] ?? 0);
      },
      { what: `${texts.length} finished jobs`, done: (n) => n >= texts.length },
    );
    const results = await finished;

    expect(results).toEqual(texts.map((t) => ({ length: t.length, upper: t.toUpperCase() })));
    const stored = await Promise.all(jobs.map((job) => queue.getJob(job.id ?? '')));
    expect(stored.map((job) => job?.returnvalue as unknown)).toEqual(results);
    expect(await queue.getJobCounts('completed', 'failed', 'waiting')).toMatchObject({
      completed: texts.length,
      failed: 0,
      waiting: 0,
    });
  });
});
