// A native session whose runs go to libuv's pool (a shard's runsPerThread above 1): the same
// numbers as a run on the calling thread, several of one thread's runs under way at once, a
// release that waits them out, and a shard of one thread with two runs that answers as a shard of
// two threads does, on one session.
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FeedMismatchError, OrtStatusError } from '../../../src/errors.ts';
import { silentLogger } from '../../../src/logger.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { OrtLibrary } from '../../../src/runtime/native/ort-library.ts';
import { SharedSessions } from '../../../src/runtime/native/shared-sessions.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';
import { bertFeeds } from './bert-feeds.ts';
import { BATCHES_PER_THREAD, Shard } from '../../../src/shards/shard.ts';
import { compileShard } from '../../../src/shards/shard-spec.ts';

const MODELS = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const BERT = join(MODELS, 'bert-text-classification', 'model.onnx');
const native = compileRuntimeOptions({ binding: 'native' });

// Token ids of the fixture's 2,000-word vocabulary.
const TEXTS = [
  [101, 1592, 1088, 102],
  [101, 1792, 1088, 1003, 1037, 1231, 102],
  [101, 1023, 102],
];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('runs on libuv’s pool', () => {
  it('gives the calling thread’s numbers, with many runs of one thread under way at once', async () => {
    const offThread = vi.spyOn(OrtLibrary.prototype, 'callOffThread');
    const here = createNativeSession(BERT, native);
    const pooled = createNativeSession(BERT, native, { runsOffThread: true });
    try {
      const expected = TEXTS.map((ids) => here.runSync(bertFeeds(here, ids)));
      const runs = Array.from({ length: 12 }, (_, i) =>
        pooled.run(bertFeeds(pooled, TEXTS[i % TEXTS.length] ?? [])),
      );
      // Every run was handed to the pool before the first one finished.
      expect(offThread).toHaveBeenCalledTimes(12);
      const got = await Promise.all(runs);
      got.forEach((outputs, i) => {
        expect(outputs).toEqual(expected[i % TEXTS.length]);
      });
    } finally {
      await here.release();
      await pooled.release();
    }
  });

  it('turns a bad feed into the same typed error, before anything reaches the pool', async () => {
    const offThread = vi.spyOn(OrtLibrary.prototype, 'callOffThread');
    const pooled = createNativeSession(BERT, native, { runsOffThread: true });
    try {
      const feeds = bertFeeds(pooled, [101, 102]);
      const name = pooled.inputNames[0] ?? '';
      feeds[name] = new Tensor('float32', new Float32Array(2), [1, 2]);
      await expect(pooled.run(feeds)).rejects.toThrow(FeedMismatchError);
      expect(offThread).not.toHaveBeenCalled();
    } finally {
      await pooled.release();
    }
  });

  it("turns ONNX Runtime's failure on the pool into the OrtStatusError naming the model", async () => {
    const pooled = createNativeSession(BERT, native, { runsOffThread: true });
    try {
      // 7592 is outside the fixture's vocabulary: the Gather kernel fails inside Run.
      const failed = pooled.run(bertFeeds(pooled, [101, 7592, 102]));
      await expect(failed).rejects.toThrow(OrtStatusError);
      await expect(failed).rejects.toThrow(/bert-text-classification.*Gather/);
      // The failure cost nothing else: the next run goes through.
      await expect(pooled.run(bertFeeds(pooled, TEXTS[0] ?? []))).resolves.toBeDefined();
    } finally {
      await pooled.release();
    }
  });

  it('releases the session only once the runs under way have ended', async () => {
    const pooled = createNativeSession(BERT, native, { runsOffThread: true });
    const runs = Array.from({ length: 8 }, () => pooled.run(bertFeeds(pooled, TEXTS[1] ?? [])));
    const released = pooled.release();
    const outcomes = await Promise.allSettled(runs);
    await released;
    expect(outcomes.map((o) => o.status)).toEqual(Array(8).fill('fulfilled'));
    await expect(pooled.run(bertFeeds(pooled, TEXTS[0] ?? []))).rejects.toThrow(/released/);
  });
});

describe('runsPerThread in a cpu shard', () => {
  it('defaults to 1, and counts in the default thread count', () => {
    expect(compileShard('cpu', 'shard', 4)).toMatchObject({ threads: 4, runsPerThread: 1 });
    expect(compileShard({ device: 'cpu', runsPerThread: 2 }, 'shard', 4)).toMatchObject({
      threads: 2,
      runsPerThread: 2,
    });
    expect(compileShard({ device: 'cpu', runsPerThread: 4 }, 'shard', 2).threads).toBe(1);
    expect(() => compileShard({ device: 'cpu', runsPerThread: 0 })).toThrow(/runsPerThread/);
  });
});

describe('a shard of one thread with two runs', () => {
  it('takes two batches per run, holds one session, and answers as two threads do', async () => {
    const setup = {
      models: {
        bert: {
          path: join(MODELS, 'bert-text-classification'),
          runtime: { binding: 'native' as const },
        },
      },
      pipelines: { classify: { task: 'textClassification', model: 'bert' } },
    };
    const one = new Shard({
      spec: compileShard({ device: 'cpu', threads: 1, runsPerThread: 2 }),
      setup,
      logger: silentLogger,
    });
    const two = new Shard({
      spec: compileShard({ device: 'cpu', threads: 2 }),
      setup,
      logger: silentLogger,
    });
    try {
      await Promise.all([one.warmup(), two.warmup()]);
      expect(one.capacity).toBe(2 * BATCHES_PER_THREAD);
      expect(new SharedSessions(one.sessionTable).size).toBe(1);
      const texts = ['a short text', 'another one, a little longer than the first', 'third'];
      const [ones, twos] = await Promise.all([
        Promise.all(texts.map((t) => one.run('classify', [t, texts[0]]))),
        Promise.all(texts.map((t) => two.run('classify', [t, texts[0]]))),
      ]);
      expect(ones.map((r) => r.outputs)).toEqual(twos.map((r) => r.outputs));
    } finally {
      await Promise.all([one.drain(), two.drain()]);
    }
  });
});
