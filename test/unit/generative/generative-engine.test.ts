// The generative engine end to end through its worker thread: concurrent requests stream their
// tokens, equal the single-request path, and cancellation, deadlines, limits, pressure and close
// cross the thread boundary.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CancelledError,
  ClosedError,
  ConfigError,
  DeadlineExceededError,
  InputError,
  OverloadedError,
  WorkerCrashedError,
} from '../../../src/errors.ts';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import type { StreamEvent } from '../../../src/generative/generation-stream.ts';
import { Tensor } from 'onnxruntime-node';
import {
  cutPoints,
  formGroups,
  hostRowMoves,
  type GroupMember,
} from '../../../src/generative/decode-groups.ts';
import { dropRows } from '../../../src/generative/kv-batch.ts';
import type {
  KvLayout,
  KvState,
  SharedPrefix,
} from '../../../src/pipelines/generation/kv-cache.ts';
import { compileSchedulerOptions, Scheduler } from '../../../src/generative/scheduler.ts';
import { SharedSessions } from '../../../src/runtime/native/shared-sessions.ts';

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const goldens = (
  JSON.parse(readFileSync(join(MODEL, 'goldens.json'), 'utf8')) as {
    generation: { call: { prompt: unknown }; new_ids: unknown }[];
  }
).generation.filter((g) => typeof g.call.prompt === 'string');

async function collect(stream: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

describe('GenerativeEngine (worker thread)', () => {
  let engine: GenerativeEngine;
  beforeAll(async () => {
    engine = await GenerativeEngine.start({
      model: { path: MODEL },
      generation: { maxNewTokens: 24 },
      scheduler: { maxActive: 3, stepTokens: 16, maxKvTokens: 300 },
      intraOpThreads: 1,
    });
  });
  afterAll(() => engine.close('abort'));

  it('streams concurrent requests whose greedy ids equal the goldens', async () => {
    const streams = goldens.map((g) => engine.submit(g.call.prompt));
    const all = await Promise.all(streams.map(collect));
    all.forEach((events, i) => {
      const done = events.at(-1);
      expect(done?.type).toBe('done');
      if (done?.type !== 'done') return;
      expect(done.result.tokenIds).toEqual(goldens[i]?.new_ids);
      const tokens = events.filter((e) => e.type === 'token');
      expect(tokens.map((e) => e.tokenId)).toEqual(done.result.tokenIds);
      expect(tokens.map((e) => e.text).join('')).toBe(done.result.text);
    });
  });

  it('minNewTokens forces the count; stop sequences end early and are left out', async () => {
    const forced = await engine.submit('Hello there', {
      generation: { minNewTokens: 24, maxNewTokens: 24 },
    }).result;
    expect(forced.generatedTokens).toBe(24);
    const full = await engine.submit('Hello there').result;
    const stop = full.text.slice(6, 9);
    const stopped = await engine.submit('Hello there', { generation: { stopSequences: [stop] } })
      .result;
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.text).toBe(full.text.slice(0, full.text.indexOf(stop)));
  });

  it('cancels by signal and by deadline across the thread boundary', async () => {
    const controller = new AbortController();
    const long = engine.submit('Hello there', {
      generation: { maxNewTokens: 200, minNewTokens: 200 },
      signal: controller.signal,
    });
    const seen: StreamEvent[] = [];
    const reading = (async () => {
      for await (const event of long) {
        seen.push(event);
        if (seen.length === 3) controller.abort();
      }
    })();
    await expect(reading).rejects.toBeInstanceOf(CancelledError);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(seen.length).toBeLessThan(200);
    const late = engine.submit('Hello there', {
      generation: { maxNewTokens: 200, minNewTokens: 200 },
      timeoutMs: 1,
    });
    await expect(late.result).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it('rejects a request that can never fit and bad options, naming the field', async () => {
    await expect(
      engine.submit('Hello there', { generation: { maxNewTokens: 1000 } }).result,
    ).rejects.toBeInstanceOf(InputError);
    await expect(engine.submit(42).result).rejects.toMatchObject({ field: 'input' });
    await expect(
      GenerativeEngine.start({
        model: { path: MODEL },
        scheduler: { maxActive: 8, stepTokens: 4 },
      }),
    ).rejects.toBeInstanceOf(ConfigError);
  });
});

describe('GenerativeEngine pressure and close', () => {
  it('pauses sources, overloads past maxPending, resumes, and drains', async () => {
    const engine = await GenerativeEngine.start({
      model: { path: MODEL },
      generation: { maxNewTokens: 8 },
      maxPending: 4,
      intraOpThreads: 1,
    });
    const signals: string[] = [];
    engine.onPressure((p) => signals.push(p));
    const streams = Array.from({ length: 4 }, () => engine.submit('Hello there'));
    expect(signals).toEqual(['pause']);
    await expect(engine.submit('Hello there').result).rejects.toBeInstanceOf(OverloadedError);
    await engine.close('drain');
    for (const s of streams) expect((await s.result).generatedTokens).toBe(8);
    expect(signals).toEqual(['pause', 'resume']);
    await expect(engine.submit('Hello there').result).rejects.toBeInstanceOf(ClosedError);
  });

  it('a crashed thread fails its requests and is replaced for the next ones', async () => {
    const engine = await GenerativeEngine.start({
      model: { path: MODEL },
      intraOpThreads: 1,
      workerFile: join(
        import.meta.dirname,
        '..',
        '..',
        'fixtures',
        'workers',
        'crashing-generation-worker.ts',
      ),
    });
    const victim = engine.submit('Hello there', {
      generation: { maxNewTokens: 500, minNewTokens: 500 },
    });
    engine.submit('__crash__');
    await expect(victim.result).rejects.toBeInstanceOf(WorkerCrashedError);
    const after = await engine.submit('Hello there', { generation: { maxNewTokens: 24 } }).result;
    expect(after.tokenIds).toEqual(goldens[0]?.new_ids);
    await engine.close('drain');
  });

  it('threads on the native binding share one session of the model, freed on close', async () => {
    const engine = await GenerativeEngine.start({
      model: { path: MODEL, runtime: { binding: 'native' } },
      generation: { maxNewTokens: 24 },
      threads: 2,
      intraOpThreads: 1,
    });
    const table = new SharedSessions(engine.sessionTable);
    expect(table.size).toBe(1);
    // Requests go to the least loaded thread, so both threads run on the one session at once.
    const results = await Promise.all(
      Array.from({ length: 6 }, () => engine.submit(goldens[0]?.call.prompt).result),
    );
    for (const result of results) expect(result.tokenIds).toEqual(goldens[0]?.new_ids);
    await engine.close('drain');
    expect(table.size).toBe(0);
  });

  it('abort fails what is in flight', async () => {
    const engine = await GenerativeEngine.start({ model: { path: MODEL }, intraOpThreads: 1 });
    const stream = engine.submit('Hello there', {
      generation: { maxNewTokens: 500, minNewTokens: 500 },
    });
    await engine.close('abort');
    await expect(stream.result).rejects.toBeInstanceOf(ClosedError);
  });
});

describe('Scheduler', () => {
  const seq = (promptLength: number, maxNew = 4) => ({
    promptLength,
    kvReserve: promptLength + maxNew,
    prefilled: 0,
  });

  it('decodes first, chunks prompts in the remaining budget, admits FIFO within limits', async () => {
    const s = new Scheduler(
      compileSchedulerOptions({ maxActive: 2, stepTokens: 10, maxKvTokens: 40 }),
    );
    const a = seq(25);
    const b = seq(3);
    const c = seq(2);
    [a, b, c].forEach((x) => s.enqueue(x));
    const first = await s.plan();
    expect(first.decode).toEqual([]);
    expect(first.prefill.map((p) => [p.seq, p.length])).toEqual([[a, 10]]);
    expect(s.waitingCount).toBe(1);
    a.prefilled = 10;
    s.remove(b);
    const second = await s.plan();
    // c was blocked by maxActive and is admitted once b left; a takes the whole budget.
    expect(second.prefill.map((p) => [p.seq, p.from, p.length])).toEqual([[a, 10, 10]]);
    expect(s.activeCount).toBe(2);
    expect(s.reservedKvTokens).toBe(29 + 6);
    a.prefilled = 25;
    s.promote(a);
    const third = await s.plan();
    // a decodes (one token of the budget), then c's whole prompt fits in the rest.
    expect(third.decode).toEqual([a]);
    expect(third.prefill.map((p) => [p.seq, p.length])).toEqual([[c, 2]]);
  });

  it('sizes a first chunk after its start hook (a prefix-cache hit shortens it)', async () => {
    const s = new Scheduler(
      compileSchedulerOptions({ maxActive: 4, stepTokens: 10, maxKvTokens: 100 }),
    );
    const [a, b, c] = [seq(20), seq(20), seq(20)];
    [a, b, c].forEach((x) => s.enqueue(x));
    const started: unknown[] = [];
    const hit = (x: { prefilled: number }): void => {
      started.push(x);
      x.prefilled = 16;
    };
    const first = await s.plan(hit);
    // Each has 4 tokens left after its hit: all three fit in a budget of 10 (a, b whole, c in
    // part), and the hook ran once for each, before its chunk was sized.
    expect(first.prefill.map((p) => [p.seq, p.from, p.length])).toEqual([
      [a, 16, 4],
      [b, 16, 4],
      [c, 16, 2],
    ]);
    c.prefilled = 18;
    await s.plan(hit);
    expect(started).toEqual([a, b, c]);
  });

  it('a large request at the head is not overtaken by smaller ones (no starvation)', async () => {
    const s = new Scheduler(
      compileSchedulerOptions({ maxActive: 4, stepTokens: 10, maxKvTokens: 20 }),
    );
    const small = seq(4);
    const big = seq(12);
    const later = seq(2);
    s.enqueue(small);
    await s.plan();
    s.enqueue(big);
    s.enqueue(later);
    await s.plan();
    // big (16) does not fit beside small (8) within 20; later (6) would, but must wait behind it.
    expect(s.waitingCount).toBe(2);
    s.remove(small);
    await s.plan();
    expect(s.waitingCount).toBe(1);
    expect(s.reservedKvTokens).toBe(16);
  });
});

describe('dropRows', () => {
  const layout: KvLayout = {
    pastNames: ['past_key_values.0.key', 'past_key_values.0.value'],
    presentNames: ['present.0.key', 'present.0.value'],
    prefixNames: [],
    kvHeads: 2,
    headDim: 3,
    dtype: 'float32',
    logitsName: 'logits',
    hasPositionIds: true,
    hasUseCacheBranch: false,
    appending: false,
  };
  // Five rows of 4 cached columns; every value says its tensor, row, head, column and dimension.
  const value = (t: number, r: number, h: number, c: number, d: number): number =>
    t * 10_000 + r * 1000 + h * 100 + c * 10 + d;
  const rowValues = (t: number, r: number): number[] =>
    [0, 1].flatMap((h) => [0, 1, 2, 3].flatMap((c) => [0, 1, 2].map((d) => value(t, r, h, c, d))));
  const state = (): KvState => ({
    batch: 5,
    past: [0, 1].map(
      (t) =>
        new Tensor(
          'float32',
          Float32Array.from([0, 1, 2, 3, 4].flatMap((r) => rowValues(t, r))),
          [5, 2, 4, 3],
        ),
    ),
    pastLength: 4,
    attentionMask: [0, 1, 2, 3, 4].map((r) => [r % 2, 1, 1, 1]),
    realTokens: [10, 11, 12, 13, 14],
  });

  it('moves the last rows into the removed ones in place and keeps the rest where they are', () => {
    const before = state();
    const storage = (before.past[0] as Tensor | undefined)?.data;
    const { state: after, from } = dropRows(layout, before, new Set([1, 4, 2]));
    expect(from).toEqual([0, 3]);
    expect(after.batch).toBe(2);
    expect(after.pastLength).toBe(4);
    after.past.forEach((tensor, t) => {
      expect(tensor.dims).toEqual([2, 2, 4, 3]);
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual([
        ...rowValues(t, 0),
        ...rowValues(t, 3),
      ]);
    });
    // A view of the same storage: nothing new was allocated.
    expect(((after.past[0] as Tensor | undefined)?.data as Float32Array).buffer).toBe(
      (storage as Float32Array).buffer,
    );
    expect(after.attentionMask).toEqual([
      [0, 1, 1, 1],
      [1, 1, 1, 1],
    ]);
    expect(after.realTokens).toEqual([10, 13]);
  });

  it('drops trailing rows without copying any', () => {
    const { state: after, from } = dropRows(layout, state(), new Set([3, 4]));
    expect(from).toEqual([0, 1, 2]);
    expect(Array.from((after.past[1] as Tensor | undefined)?.data as Float32Array)).toEqual(
      [0, 1, 2].flatMap((r) => rowValues(1, r)),
    );
  });
});

describe('decode groups', () => {
  it('splits rows by cached length only when the padding saved beats a run', () => {
    expect(cutPoints([10, 12, 300], 100)).toEqual([
      [0, 2],
      [2, 3],
    ]);
    // Saving 2 x 288 padded token-rows is not worth a run that costs 1000.
    expect(cutPoints([10, 12, 300], 1000)).toEqual([[0, 3]]);
    expect(cutPoints([5, 5, 9], 0)).toEqual([
      [0, 2],
      [2, 3],
    ]);
    expect(cutPoints([], 10)).toEqual([]);
  });

  // Batch-of-one states on a shared prefix of `p` tokens (or none) with `own` columns each.
  const layout: KvLayout = {
    pastNames: ['past_key_values.0.key', 'past_key_values.0.value'],
    presentNames: ['present.0.key', 'present.0.value'],
    prefixNames: ['prefix_key_values.0.key', 'prefix_key_values.0.value'],
    kvHeads: 1,
    headDim: 1,
    dtype: 'float32',
    logitsName: 'logits',
    hasPositionIds: true,
    hasUseCacheBranch: false,
    appending: false,
  };
  const prefix = (p: number): SharedPrefix => ({
    past: [0, 1].map((t) => new Tensor('float32', Float32Array.from(range(p, t)), [1, 1, p, 1])),
    length: p,
  });
  const range = (n: number, t: number): number[] =>
    Array.from({ length: n }, (_, i) => t * 1000 + i);
  const rowState = (own: number, shared?: SharedPrefix): KvState => {
    const offset = shared?.length ?? 0;
    return {
      batch: 1,
      ...(shared === undefined ? {} : { shared }),
      past: [0, 1].map(
        (t) =>
          new Tensor('float32', Float32Array.from(range(offset + own, t).slice(offset)), [
            1,
            1,
            own,
            1,
          ]),
      ),
      pastLength: own,
      attentionMask: [Array.from({ length: own }, () => 1)],
      realTokens: [offset + own],
    };
  };
  const member = (id: number, state: KvState, candidate?: SharedPrefix): GroupMember<number> => ({
    seq: id,
    ref: { state, row: 0 },
    ...(candidate === undefined ? {} : { candidate }),
  });

  it('keeps a shared prefix apart only when the copies it saves beat a run', async () => {
    const big = prefix(300);
    const small = prefix(40);
    const members = [
      member(0, rowState(20, big)),
      member(1, rowState(30, big)),
      // Prefilled the template itself: its first 300 columns are the prefix's; it moves onto it.
      member(2, rowState(310), big),
      member(3, rowState(15, small)),
      member(4, rowState(25, small)),
      member(5, rowState(50)),
    ];
    const moves = hostRowMoves(layout);
    const groups = await formGroups(members, 100, moves);
    const byRows = new Map(groups.map((g) => [g.rows.join(','), g.state]));
    // 3 rows x 300: (3 - 1) x 300 > 100, kept; 2 rows x 40: 40 < 100, spliced back into the rows.
    // Each group's rows in ascending order of their own spans.
    expect([...byRows.keys()].sort()).toEqual(['2,0,1', '5,3,4']);
    const shared = byRows.get('2,0,1');
    expect(shared?.shared).toBe(big);
    expect(shared?.realTokens).toEqual([310, 320, 330]);
    expect(shared?.pastLength).toBe(30);
    const plain = byRows.get('5,3,4');
    expect(plain?.shared).toBeUndefined();
    expect(plain?.realTokens).toEqual([50, 55, 65]);
    // Row 4 (the small prefix's 40 columns, then its own 25) holds its positions 0..64 in order.
    const rowOf = (state: KvState, r: number, t: number): number[] => {
      const data = (state.past[t] as Tensor | undefined)?.data as Float32Array;
      const span = state.realTokens[r] ?? 0;
      return Array.from(
        data.subarray((r + 1) * state.pastLength - span, (r + 1) * state.pastLength),
      );
    };
    expect(rowOf(plain as KvState, 2, 1)).toEqual(range(65, 1));
    // Row 2 (first: the shortest own span) keeps only its 10 columns after the prefix.
    expect(rowOf({ ...(shared as KvState), realTokens: [10, 20, 30] }, 0, 0)).toEqual(
      range(310, 0).slice(300),
    );
    // At a run cost above what the big prefix saves, every row takes its prefix back.
    const one = await formGroups(members, 1e9, moves);
    expect(one).toHaveLength(1);
    expect(one[0]?.state.shared).toBeUndefined();
    // Unless every row shares the one prefix: then nothing is copied.
    const all = await formGroups(members.slice(0, 2), 1e9, moves);
    expect(all[0]?.state.shared).toBe(big);
  });
});
