// BullMQ refusals and exhausted attempts: dead letters with the job's data and the reason, while
// the worker keeps processing good jobs.
import { describe, expect, inject, it } from 'vitest';
import type { Queue } from 'bullmq';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import {
  corpusRecords,
  recordingLogger,
  SCRIPTED_WORKER,
  workerConfig,
  useClosers,
  openQueue,
} from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { waitForProgress } from '../helpers/progress.ts';

const redisUrl = inject('redisUrl');
const closers = useClosers();

const queueOf = (name: string): Queue => openQueue(redisUrl, name, closers);

interface Envelope {
  key: string | null;
  value?: string;
  valueBase64?: string;
  headers: Record<string, string>;
}

async function lettersOf(dlq: Queue): Promise<Envelope[]> {
  return (await dlq.getJobs(['waiting'], 0, 1000)).map((job) => job.data as Envelope);
}

describe('BullMQ dead letters (real Redis)', () => {
  it('refused jobs go to the DLQ at once and complete; good jobs keep flowing', async () => {
    const input = queueOf(uniqueName('in'));
    const output = queueOf(uniqueName('out'));
    const dlq = queueOf(uniqueName('dlq'));
    const bad: [code: string, data: unknown, says: string][] = [
      ['FIELD_MISSING', { id: 'no-text', body: 'hello' }, "no 'text' field"],
      ['WRONG_TYPE', { id: 'number', text: 42 }, 'number'],
      ['TOO_LARGE', { id: 'long', text: 'y'.repeat(12_000) }, 'limits.maxTextLength'],
      ['RECORD_TOO_LARGE', { id: 'big', text: 'x'.repeat(20_000) }, 'limits.maxRecordBytes'],
    ];
    const good = corpusRecords(300);
    const data: unknown[] = [...good];
    bad.forEach(([, item], i) => data.splice(60 * (i + 1), 0, item));
    const jobs = await input.addBulk(data.map((d) => ({ name: 'classify', data: d })));
    const logger = recordingLogger();
    const worker = await StreamWorker.start(
      workerConfig(
        redisUrl,
        {
          source: { type: 'bullmq', queue: input.name, concurrency: 64 },
          sink: { type: 'bullmq', queue: output.name },
          dlq: { type: 'bullmq', queue: dlq.name, jobName: 'dead' },
        },
        { limits: { maxRecordBytes: 16_384, maxTextLength: 10_000 } },
      ),
      { logger },
    );
    closers.push(() => worker.stop(20_000));
    await waitForProgress(async () => (await input.getJobCounts('completed'))['completed'], {
      what: 'every job completed',
      done: (n) => n === data.length,
    });
    await worker.stop(20_000);

    expect(await input.getJobCounts('failed')).toEqual({ failed: 0 });
    expect(await output.count()).toBe(good.length);
    const letters = await lettersOf(dlq);
    expect(letters).toHaveLength(bad.length);
    for (const [code, item, says] of bad) {
      const id = (item as { id: string }).id;
      const index = data.indexOf(item);
      const letter = letters.find((l) => l.value?.includes(`"id":"${id}"`));
      expect(letter?.value, id).toBe(JSON.stringify(item));
      expect(letter?.headers['hugot.error.code'], id).toBe(code);
      expect(letter?.headers['hugot.error.stage'], id).toBe('validate');
      expect(letter?.headers['hugot.error.message'], id).toContain(says);
      expect(letter?.headers['hugot.error.origin.queue']).toBe(input.name);
      expect(letter?.headers['hugot.error.origin.job.id']).toBe(jobs[index]?.id);
      // The refused job completed (no retry) and says so in its return value.
      const job = await input.getJob(jobs[index]?.id ?? '');
      expect(job?.attemptsMade, id).toBe(1);
      expect(job?.returnvalue, id).toMatchObject({ deadLettered: true, code });
    }
    expect(worker.counters()['classify']).toMatchObject({
      written: good.length,
      deadLettered: bad.length,
    });
    expect(logger.errors).toEqual([]);
  });

  it('a job whose retriable failure outlasts its BullMQ attempts goes to the DLQ', async () => {
    const input = queueOf(uniqueName('in'));
    const output = queueOf(uniqueName('out'));
    const dlq = queueOf(uniqueName('dlq'));
    // The scripted inference thread exits on 'crash' (a retriable WorkerCrashedError) and
    // echoes 'echo:<x>' as x.
    const echoes = Array.from({ length: 40 }, (_, i) => ({ id: `e${i}`, text: `echo:${i}` }));
    await input.addBulk(echoes.slice(0, 20).map((d) => ({ name: 'classify', data: d })));
    const doomed = await input.add(
      'classify',
      { id: 'doomed', text: 'crash' },
      { attempts: 2, backoff: { type: 'fixed', delay: 50 } },
    );
    await input.addBulk(echoes.slice(20).map((d) => ({ name: 'classify', data: d })));
    const worker = await StreamWorker.start(
      workerConfig(
        redisUrl,
        {
          source: { type: 'bullmq', queue: input.name, concurrency: 8 },
          sink: { type: 'bullmq', queue: output.name },
          dlq: { type: 'bullmq', queue: dlq.name },
        },
        {
          // BullMQ's attempts do the retrying; batches of one keep the crash to its own job.
          delivery: { retries: 0 },
          batching: { maxBatchSize: 1, maxWaitMs: 0 },
        },
      ),
      { logger: recordingLogger(), workerFile: SCRIPTED_WORKER },
    );
    closers.push(() => worker.stop(20_000));
    await waitForProgress(async () => ({ dead: await dlq.count(), out: await output.count() }), {
      what: 'the doomed job in the DLQ and 40 outputs',
      done: ({ dead, out }) => dead === 1 && out === 40,
    });
    await worker.stop(20_000);

    const failed = await input.getJob(doomed.id ?? '');
    expect(await failed?.getState()).toBe('failed');
    expect(failed?.attemptsMade).toBe(2);
    const [letter] = await lettersOf(dlq);
    expect(letter?.value).toBe(JSON.stringify({ id: 'doomed', text: 'crash' }));
    expect(letter?.headers['hugot.error.code']).toBe('WORKER_CRASHED');
    expect(letter?.headers['hugot.error.stage']).toBe('inference');
    expect(letter?.headers['hugot.error.message']).toContain('attempts exhausted (2 of 2)');
    expect(letter?.headers['hugot.error.origin.job.id']).toBe(doomed.id);
    const outputs = (await output.getJobs(['waiting'], 0, 100)).map(
      (j) => j.data as { id: string; result: unknown },
    );
    expect(outputs.map((o) => o.id).sort()).toEqual(echoes.map((e) => e.id).sort());
    expect(outputs.every((o) => o.result === o.id.slice(1))).toBe(true);
    expect(await input.getJobCounts('completed', 'failed')).toEqual({ completed: 40, failed: 1 });
  });
});
