// Feeds staged in buffers ONNX Runtime allocated (runtime.feedsFrom: staging), on the host
// allocator: the CPU twin of a GPU session's pinned buffers. The same outputs as feeds read from JS
// memory on every kind of run (plain, off the thread, linked, resident), a buffer per input kept
// from run to run and grown only for a longer batch, and nothing left once the session goes.
import { describe, expect, it } from 'vitest';
import { FeedMismatchError, ProviderUnavailableError } from '../../../src/errors.ts';
import { DataType, encodeModel } from '../../../src/runtime/graphs/onnx-model.ts';
import type { NativeSession } from '../../../src/runtime/native/native-session.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { OrtLibrary } from '../../../src/runtime/native/ort-library.ts';
import { stagingAllocator, stagingStats } from '../../../src/runtime/native/staging-buffers.ts';
import {
  compileRuntimeOptions,
  stagesFeeds,
  type RuntimeOptions,
} from '../../../src/runtime/runtime-options.ts';
import type { ResidentTensor } from '../../../src/runtime/session.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';
import { thrownBy } from '../../helpers/thrown.ts';
import { BERT_FIXTURE, bertFeeds } from './bert-feeds.ts';

const BERT = BERT_FIXTURE;
const staged = compileRuntimeOptions({ binding: 'native', feedsFrom: 'staging' });
const fromJs = compileRuntimeOptions({ binding: 'native', feedsFrom: 'js' });

const SHORT = [101, 1592, 1088, 102];
const LONG = Array.from({ length: 60 }, (_, i) => 1000 + (i % 900));

const PLUS_ONE = encodeModel({
  name: 'plus-one',
  inputs: [{ name: 'x', type: DataType.float, shape: ['a', 'b'] }],
  outputs: [{ name: 'y', type: DataType.float, shape: ['a', 'b'] }],
  constants: [{ name: 'one', type: DataType.float, dims: [], values: [1] }],
  nodes: [{ op: 'Add', inputs: ['x', 'one'], outputs: ['y'] }],
});

async function withSessions<T>(
  open: () => NativeSession[],
  use: (sessions: NativeSession[]) => Promise<T> | T,
): Promise<T> {
  const sessions = open();
  try {
    return await use(sessions);
  } finally {
    for (const session of sessions) await session.release();
  }
}

describe('staging buffers (feedsFrom: staging, on the host allocator)', () => {
  it('is chosen on a GPU by default, on CPU only when named, and never on onnxruntime-node', () => {
    const on = (options: RuntimeOptions): boolean => stagesFeeds(compileRuntimeOptions(options));
    const gpu = { executionProviders: [{ name: 'cuda' as const }] };
    expect(on({ binding: 'native' })).toBe(false);
    expect(on({ binding: 'native', ...gpu })).toBe(true);
    expect(on({ binding: 'native', ...gpu, feedsFrom: 'js' })).toBe(false);
    expect(on({ binding: 'native', feedsFrom: 'staging' })).toBe(true);
    expect(on({ binding: 'onnxruntime-node', ...gpu, feedsFrom: 'staging' })).toBe(false);
    expect(() => compileRuntimeOptions({ feedsFrom: 'pinned' as 'staging' })).toThrow(
      /runtime\.feedsFrom/,
    );
  });

  it('gives the outputs of feeds read from JS memory, keeping a buffer per input', async () => {
    await withSessions(
      () => [createNativeSession(BERT, staged), createNativeSession(BERT, fromJs)],
      ([stage, js]) => {
        if (stage === undefined || js === undefined) throw new Error('two sessions expected');
        expect(stage.stagingMemory()).toBe('Cpu');
        expect(js.stagingMemory()).toBeUndefined();
        const before = stagingStats();
        const inputs = stage.inputNames.length;
        for (const ids of [SHORT, SHORT, SHORT.slice(0, 3)])
          expect(stage.runSync(bertFeeds(stage, ids))).toEqual(js.runSync(bertFeeds(js, ids)));
        // One buffer per input, made by the first run and reused by the next two.
        expect(stagingStats().allocations - before.allocations).toBe(inputs);
        expect(stagingStats().liveBuffers - before.liveBuffers).toBe(inputs);
        // A longer batch grows each buffer once: the old one is freed, not kept beside it.
        expect(stage.runSync(bertFeeds(stage, LONG))).toEqual(js.runSync(bertFeeds(js, LONG)));
        expect(stagingStats().allocations - before.allocations).toBe(2 * inputs);
        expect(stagingStats().liveBuffers - before.liveBuffers).toBe(inputs);
        expect(stagingStats().liveBytes - before.liveBytes).toBeGreaterThanOrEqual(
          inputs * LONG.length * 8,
        );
        // The staged copy is what ran: a later run does not change an earlier run's outputs.
        const first = stage.runSync(bertFeeds(stage, SHORT));
        const again = stage.runSync(bertFeeds(stage, LONG));
        expect(first).toEqual(js.runSync(bertFeeds(js, SHORT)));
        expect(again).toEqual(js.runSync(bertFeeds(js, LONG)));
      },
    );
  });

  it('frees every buffer with its session', async () => {
    const before = stagingStats();
    await withSessions(
      () => [createNativeSession(BERT, staged)],
      ([session]) => {
        if (session === undefined) throw new Error('one session expected');
        session.runSync(bertFeeds(session, LONG));
        expect(stagingStats().liveBuffers).toBeGreaterThan(before.liveBuffers);
      },
    );
    expect(stagingStats().liveBuffers).toBe(before.liveBuffers);
    expect(stagingStats().liveBytes).toBe(before.liveBytes);
  });

  it('gives each run under way at once a set of its own', async () => {
    const offThread = { runsOffThread: true };
    await withSessions(
      () => [createNativeSession(BERT, staged, offThread), createNativeSession(BERT, fromJs)],
      async ([pooled, js]) => {
        if (pooled === undefined || js === undefined) throw new Error('two sessions expected');
        const texts = [SHORT, LONG, SHORT.slice(0, 3), LONG.slice(0, 30)];
        const got = await Promise.all(
          Array.from({ length: 8 }, (_, i) => pooled.run(bertFeeds(pooled, texts[i % 4] ?? []))),
        );
        got.forEach((outputs, i) => {
          expect(outputs).toEqual(js.runSync(bertFeeds(js, texts[i % 4] ?? [])));
        });
      },
    );
  });

  it('feeds linked and resident runs as JS memory does', async () => {
    const x = new Tensor('float32', Float32Array.from([1, 2, 3, 4, 5, 6]), [2, 3]);
    const twice = async (options: typeof staged): Promise<number[][]> =>
      withSessions(
        () => [
          createNativeSession({ name: 'plus-one', bytes: PLUS_ONE }, options),
          createNativeSession({ name: 'plus-one', bytes: PLUS_ONE }, options),
        ],
        async ([first, second]) => {
          if (first === undefined || second === undefined) throw new Error('two sessions expected');
          const linked = await first.runLinked({
            feeds: { x },
            next: second,
            link: { x: 'y' },
            nextFeeds: {},
          });
          const resident = await first.runResident({
            feeds: { x },
            hostOutputs: [],
            residentOutputs: ['y'],
          });
          const kept = resident.resident['y'] as ResidentTensor;
          const fed = await first.runResident({
            feeds: { x: kept },
            hostOutputs: ['y'],
            residentOutputs: [],
          });
          const keptOnHost = kept.toHost();
          kept.release();
          return [linked['y'], keptOnHost, fed.host['y']].map((t) =>
            Array.from((t as Tensor).data as Float32Array),
          );
        },
      );
    const expected = [
      [3, 4, 5, 6, 7, 8],
      [2, 3, 4, 5, 6, 7],
      [3, 4, 5, 6, 7, 8],
    ];
    expect(await twice(staged)).toEqual(expected);
    expect(await twice(fromJs)).toEqual(expected);
  });

  it('refuses a feed of the wrong type before staging it', async () => {
    await withSessions(
      () => [createNativeSession(BERT, staged)],
      ([session]) => {
        if (session === undefined) throw new Error('one session expected');
        const feeds = bertFeeds(session, SHORT);
        const name = session.inputNames[0] ?? '';
        feeds[name] = new Tensor('float32', new Float32Array(SHORT.length), [1, SHORT.length]);
        const before = stagingStats();
        const err = thrownBy(FeedMismatchError, () => session.runSync(feeds));
        expect(err.message).toContain(name);
        expect(stagingStats().allocations).toBe(before.allocations);
      },
    );
  });

  it('falls back to JS memory where the session has no allocator for it, unless asked to stage', async () => {
    // A CPU session keeps no 'CudaPinned' allocator: a GPU session without one is refused alike.
    const lib = OrtLibrary.get();
    const pinned = lib.out('CreateMemoryInfo', 'CudaPinned', 0, 0, -1);
    try {
      await withSessions(
        () => [createNativeSession(BERT, fromJs)],
        ([session]) => {
          if (session === undefined) throw new Error('one session expected');
          const chosen = stagingAllocator(lib, session.address, pinned, false);
          expect('problem' in chosen && chosen.problem).toContain("no 'CudaPinned' allocator");
          const err = thrownBy(ProviderUnavailableError, () =>
            stagingAllocator(lib, session.address, pinned, true),
          );
          expect(err.field).toBe('runtime.feedsFrom');
          expect(err.message).toContain("set runtime.feedsFrom to 'js'");
        },
      );
    } finally {
      lib.fn('ReleaseMemoryInfo')(pinned);
    }
  });
});
