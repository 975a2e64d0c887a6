import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClosedError, InputError, WorkerCrashedError } from '../../../src/errors.ts';
import { silentLogger, type Logger } from '../../../src/logger.ts';
import { BATCHES_PER_THREAD, Shard } from '../../../src/shards/shard.ts';
import { compileShard } from '../../../src/shards/shard-spec.ts';

const WORKER = join(import.meta.dirname, '..', '..', 'fixtures', 'workers', 'scripted-worker.ts');
let scratch: string;
const shards: Shard[] = [];

function shard(threads = 2, logger: Logger = silentLogger): Shard {
  const created = new Shard({
    spec: compileShard({ device: 'cpu', threads }),
    setup: { models: {}, pipelines: {} },
    logger,
    workerFile: WORKER,
  });
  shards.push(created);
  return created;
}

function restore(name: string, value: string | undefined): void {
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-shard-'));
});
afterEach(async () => {
  await Promise.all(shards.splice(0).map((s) => s.abort()));
});
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe('shard of real worker threads', () => {
  it("starts its threads with Node's compile cache on, unless NODE_DISABLE_COMPILE_CACHE says not", async () => {
    const saved = {
      on: process.env.NODE_COMPILE_CACHE,
      off: process.env.NODE_DISABLE_COMPILE_CACHE,
    };
    const cache = join(scratch, 'compile-cache');
    try {
      process.env.NODE_COMPILE_CACHE = cache;
      delete process.env.NODE_DISABLE_COMPILE_CACHE;
      const on = shard(1);
      const [dir] = (await on.run('script', ['compile-cache'])).outputs as string[];
      expect(dir?.startsWith(cache)).toBe(true);
      process.env.NODE_DISABLE_COMPILE_CACHE = '1';
      const off = shard(1);
      expect((await off.run('script', ['compile-cache'])).outputs).toEqual(['off']);
    } finally {
      restore('NODE_COMPILE_CACHE', saved.on);
      restore('NODE_DISABLE_COMPILE_CACHE', saved.off);
    }
  });

  it('runs batches and hands each thread its next batch while it runs one', async () => {
    const s = shard(2);
    await s.warmup();
    expect(s.capacity).toBe(2 * BATCHES_PER_THREAD);
    const runs = [
      s.run('script', ['slow:50:a']),
      s.run('script', ['slow:50:b']),
      s.run('script', ['echo:c']),
      s.run('script', ['echo:d']),
    ];
    expect(s.inFlight).toBe(4);
    expect(s.hasRoom).toBe(false);
    const replies = await Promise.all(runs);
    expect(replies.map((r) => r.outputs)).toEqual([['a'], ['b'], ['c'], ['d']]);
    expect(s.inFlight).toBe(0);
  });

  it('has a thread take its next batch while the one it runs awaits', async () => {
    const s = shard(1);
    await s.warmup();
    const finished: string[] = [];
    const note = (name: string) => (r: { outputs: unknown[] }) => {
      finished.push(name);
      return r.outputs;
    };
    const slow = s.run('script', ['slow:300:slow']).then(note('slow'));
    const quick = s.run('script', ['echo:quick']).then(note('quick'));
    expect(await Promise.all([slow, quick])).toEqual([['slow'], ['quick']]);
    // With one batch per thread, the quick one would have waited for the slow one's reply.
    expect(finished).toEqual(['quick', 'slow']);
  });

  it('replaces a thread that crashed and retries its batch once, on another thread', async () => {
    const warnings: object[] = [];
    const logger: Logger = { ...silentLogger, warn: (fields) => warnings.push(fields) };
    const s = shard(2, logger);
    const marker = join(scratch, 'crashed-once');
    const result = await s.run('script', [`crash-once:${marker}`, 'echo:after']);
    const crashedOn = await readFile(marker, 'utf8');
    expect(result.outputs[0]).toMatch(/^survived on \d+$/);
    expect(result.outputs[0]).not.toBe(`survived on ${crashedOn}`);
    expect(result.outputs[1]).toBe('after');
    expect(warnings).toHaveLength(1);
    // The pool is whole again: both threads answer.
    expect(
      (await Promise.all([s.run('script', ['echo:x']), s.run('script', ['echo:y'])])).map(
        (r) => r.outputs,
      ),
    ).toEqual([['x'], ['y']]);
  });

  it('retries a batch that died beside a crashing one alone, so only the culprit fails', async () => {
    const s = shard(1);
    await s.warmup();
    // Both batches are on the one thread when it dies; both retries would share its replacement
    // (and die together again) unless each retry runs alone.
    const culprit = s.run('script', ['crash']);
    const bystander = s.run('script', ['echo:unharmed']);
    await expect(culprit).rejects.toThrow(WorkerCrashedError);
    expect((await bystander).outputs).toEqual(['unharmed']);
  });

  it('fails a batch that kills its thread twice with a clear error, and keeps serving', async () => {
    const s = shard(2);
    const attempt = s.run('script', ['crash']);
    await expect(attempt).rejects.toThrow(WorkerCrashedError);
    await expect(attempt).rejects.toThrow(/died twice running a batch of 1 for 'script'/);
    expect((await s.run('script', ['echo:still here'])).outputs).toEqual(['still here']);
  });

  it("settles each batch of a message on its own: a culprit's error or crash fails it alone", async () => {
    const s = shard(1);
    await s.warmup();
    const refused = await s.runBatches('script', [
      { inputs: ['echo:a'] },
      { inputs: ['reject'] },
      { inputs: ['echo:b', 'echo:c'] },
    ]);
    expect(refused[0]).toEqual({ outputs: ['a'], computeMs: 0 });
    expect((refused[1] as { error: unknown }).error).toBeInstanceOf(InputError);
    expect(refused[2]).toEqual({ outputs: ['b', 'c'], computeMs: 0 });
    // The thread dies inside the message's second batch: every batch is retried alone, so the
    // first and third come back and only the second fails.
    const crashed = await s.runBatches('script', [
      { inputs: ['echo:before'] },
      { inputs: ['crash'] },
      { inputs: ['echo:after'] },
    ]);
    expect(crashed[0]).toEqual({ outputs: ['before'], computeMs: 0 });
    expect((crashed[1] as { error: unknown }).error).toBeInstanceOf(WorkerCrashedError);
    expect(crashed[2]).toEqual({ outputs: ['after'], computeMs: 0 });
  });

  it('keeps the class of an error thrown inside the thread', async () => {
    const s = shard(1);
    await expect(s.run('script', ['reject'])).rejects.toThrow(InputError);
  });

  it('drains: in-flight batches finish, then new ones are refused', async () => {
    const s = shard(1);
    // A warm, idle thread takes the batch within run() (piscina hands it over synchronously), so
    // no sleep has to guess when it got there.
    await s.warmup();
    const running = s.run('script', ['slow:100:done']);
    const drained = s.drain();
    await expect(s.run('script', ['echo:late'])).rejects.toThrow(ClosedError);
    expect((await running).outputs).toEqual(['done']);
    await drained;
  });

  it('aborts: a batch on a thread finishes, a batch still waiting for one fails', async () => {
    // Terminating a thread inside an ONNX run aborts the whole process natively
    // ("terminate called after throwing an instance of 'Napi::Error'"), so abort never does.
    const s = shard(1);
    // Warm first: the running batch must be on the thread, not queued behind its start-up, and a
    // thread may take far longer than any fixed sleep to start on a loaded machine.
    await s.warmup();
    // A thread holds BATCHES_PER_THREAD batches; one more waits in the pool's queue.
    const onThread = Array.from({ length: BATCHES_PER_THREAD }, (_, i) =>
      s.run('script', [`slow:1000:done ${i}`]),
    );
    const waiting = s.run('script', ['slow:1000:late']);
    const failed = expect(waiting).rejects.toThrow(ClosedError);
    await s.abort();
    expect((await Promise.all(onThread)).map((r) => r.outputs)).toEqual(
      onThread.map((_, i) => [`done ${i}`]),
    );
    await failed;
  });
});
