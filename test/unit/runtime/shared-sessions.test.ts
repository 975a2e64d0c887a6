// One native session per (model, shard): the table gives every thread the same session, makes it
// once, frees it with its last holder; threads running on it at once get the numbers one thread
// gets; a shard's threads hold one session per model and the shard frees it when they stop.
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.ts';
import { SharedSessions } from '../../../src/runtime/native/shared-sessions.ts';
import { sharedIntraOpThreads } from '../../../src/runtime/runtimes.ts';
import { Shard } from '../../../src/shards/shard.ts';
import { compileShard } from '../../../src/shards/shard-spec.ts';

const MODELS = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const BERT = join(MODELS, 'bert-text-classification', 'model.onnx');
const WORKER = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'workers',
  'shared-session-worker.ts',
);

describe('the shared session table', () => {
  it('creates once, shares after, and frees with the last holder', () => {
    const table = new SharedSessions(SharedSessions.allocate(4));
    let made = 0;
    const freed: bigint[] = [];
    const create = (): bigint => BigInt(0x1000 + ++made);
    expect(table.acquire('a', create)).toEqual({ address: 0x1001n, created: true });
    expect(table.acquire('a', create)).toEqual({ address: 0x1001n, created: false });
    expect(table.acquire('b', create)).toEqual({ address: 0x1002n, created: true });
    expect(made).toBe(2);
    expect(table.holders('a')).toBe(2);
    table.release('a', (p) => freed.push(p));
    expect(freed).toEqual([]);
    table.release('a', (p) => freed.push(p));
    expect(freed).toEqual([0x1001n]);
    expect(table.holders('a')).toBe(0);
    expect(table.size).toBe(1);
    // A freed key is made anew.
    expect(table.acquire('a', create)).toEqual({ address: 0x1003n, created: true });
    expect(table.releaseAll((p) => freed.push(p))).toBe(2);
    expect(table.size).toBe(0);
  });

  it('records nothing when the session cannot be made, and says when it is full', () => {
    const table = new SharedSessions(SharedSessions.allocate(1));
    expect(() =>
      table.acquire('bad', () => {
        throw new Error('no such file');
      }),
    ).toThrow('no such file');
    expect(table.size).toBe(0);
    table.acquire('one', () => 1n);
    expect(() => table.acquire('two', () => 2n)).toThrow(/full/);
  });

  it('sizes a shared intra-op pool so that the threads use the cores once', () => {
    expect(sharedIntraOpThreads(1, 2)).toBe(1);
    expect(sharedIntraOpThreads(2, 2)).toBe(3);
    expect(sharedIntraOpThreads(4, 1)).toBe(4);
    expect(sharedIntraOpThreads(0, 4)).toBe(0);
  });
});

interface Report {
  address: string;
  first: number[];
}

function startThread(
  table: SharedArrayBuffer,
  runs: number,
): { worker: Worker; report: Promise<Report> } {
  const worker = new Worker(WORKER, {
    workerData: { onnxPath: BERT, table, ids: [101, 1592, 1088, 102], runs },
  });
  const report = new Promise<Report>((resolve, reject) => {
    worker.once('message', (m: Report) => resolve(m));
    worker.once('error', reject);
  });
  return { worker, report };
}

describe('threads on one native session', () => {
  const workers: Worker[] = [];
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.terminate()));
  });

  it('hands every thread the same session, and runs on it at once give the same numbers', async () => {
    const buffer = SharedSessions.allocate();
    const table = new SharedSessions(buffer);
    const threads = [startThread(buffer, 1), startThread(buffer, 200), startThread(buffer, 200)];
    workers.push(...threads.map((t) => t.worker));
    const reports = await Promise.all(threads.map((t) => t.report));
    expect(new Set(reports.map((r) => r.address)).size).toBe(1);
    expect(reports[0]?.first.length).toBeGreaterThan(0);
    for (const r of reports) expect(r.first).toEqual(reports[0]?.first);
    expect(table.size).toBe(1);
    // Each lets go in turn; the session stays until the last one does.
    for (const [i, t] of threads.entries()) {
      const released = new Promise((resolve) => t.worker.once('message', resolve));
      t.worker.postMessage('release');
      await released;
      expect(table.size).toBe(i === threads.length - 1 ? 0 : 1);
    }
  });
});

describe('a shard on the native binding', () => {
  it('holds one session per model for all its threads, and frees it when they stop', async () => {
    const shard = new Shard({
      spec: compileShard({ device: 'cpu', threads: 2 }),
      setup: {
        models: {
          bert: { path: join(MODELS, 'bert-text-classification'), runtime: { binding: 'native' } },
        },
        pipelines: { classify: { task: 'textClassification', model: 'bert' } },
      },
      logger: silentLogger,
    });
    try {
      await shard.warmup();
      const table = new SharedSessions(shard.sessionTable);
      expect(table.size).toBe(1);
      const runs = await Promise.all(
        Array.from({ length: 8 }, () => shard.run('classify', ['a short text', 'another one'])),
      );
      for (const run of runs) expect(run.outputs).toEqual(runs[0]?.outputs);
    } finally {
      await shard.drain();
    }
    expect(new SharedSessions(shard.sessionTable).size).toBe(0);
  });
});
