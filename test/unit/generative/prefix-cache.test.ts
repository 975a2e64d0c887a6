// The shared-prefix KV cache. Its bookkeeping on hand-made caches whose every value says which
// head and position it came from (blocks, the token left to run, LRU eviction under maxBytes),
// then on the tiny Llama: greedy output with the cache must be token-identical to output without
// it, on the single-request path and interleaved in the engine's step loop.
import { join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { GenerationLoop, type SubmitRequest } from '../../../src/generative/generation-loop.ts';
import { moveOntoPrefix, withoutPrefix } from '../../../src/generative/kv-batch.ts';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import {
  compileSchedulerOptions,
  type SchedulerOptions,
} from '../../../src/generative/scheduler.ts';
import type { GenerationResult } from '../../../src/pipelines/generation/generation-progress.ts';
import {
  emptyKvState,
  runStep,
  type KvLayout,
  type KvState,
} from '../../../src/pipelines/generation/kv-cache.ts';
import {
  compilePrefixCacheOptions,
  PrefixCache,
  type PrefixCacheOptions,
} from '../../../src/pipelines/generation/prefix-cache.ts';
import { TextGenerationPipeline } from '../../../src/pipelines/generation/text-generation.ts';
import { ModelStore, type LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';

const HEADS = 2;
const DIM = 3;
const layout = (dtype: 'float32' | 'float16' = 'float32'): KvLayout => ({
  pastNames: ['past_key_values.0.key', 'past_key_values.0.value'],
  presentNames: ['present.0.key', 'present.0.value'],
  prefixNames: [],
  kvHeads: HEADS,
  headDim: DIM,
  dtype,
  logitsName: 'logits',
  hasPositionIds: true,
  hasUseCacheBranch: false,
  appending: false,
});

/** A value that names its tensor, head, position (its token id) and dimension. */
const code = (t: number, h: number, token: number, d: number): number =>
  t * 100_000 + h * 10_000 + token * 10 + d;

/** A batch-of-one cache of the given tokens, each value coded by `code`. */
function fakeState(tokens: readonly number[], dtype: 'float32' | 'float16' = 'float32'): KvState {
  const n = tokens.length;
  const past = [0, 1].map((t) => {
    const values = Array.from({ length: HEADS * n * DIM }, (_, i) => {
      const h = Math.floor(i / (n * DIM));
      const p = Math.floor(i / DIM) % n;
      return dtype === 'float32' ? code(t, h, tokens[p] as number, i % DIM) : (t * 8 + h) * 997 + p;
    });
    return dtype === 'float32'
      ? new Tensor('float32', Float32Array.from(values), [1, HEADS, n, DIM])
      : new Tensor('float16', Uint16Array.from(values), [1, HEADS, n, DIM]);
  });
  return {
    batch: 1,
    past,
    pastLength: n,
    attentionMask: [tokens.map(() => 1)],
    realTokens: [n],
  };
}

const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from }, (_, i) => from + i);

const cacheOf = (options: PrefixCacheOptions = {}, dtype?: 'float32' | 'float16'): PrefixCache =>
  new PrefixCache(
    layout(dtype),
    compilePrefixCacheOptions({ blockTokens: 4, minTokens: 4, ...options }),
  );

describe('PrefixCache bookkeeping', () => {
  it('gives back the cached columns of the longest shared prefix, in whole blocks', async () => {
    const cache = cacheOf();
    const first = [...range(100, 110), 1, 2, 3];
    await cache.store(first, fakeState(first));
    // Shares 10 tokens with `first`: two whole blocks (8 tokens) come back.
    const second = [...range(100, 110), 7, 8, 9, 10, 11];
    const hit = await cache.lookup(second);
    expect(hit?.tokens).toBe(8);
    expect(hit?.state.pastLength).toBe(8);
    expect(hit?.state.attentionMask).toEqual([Array.from({ length: 8 }, () => 1)]);
    expect(hit?.state.realTokens).toEqual([8]);
    hit?.state.past.forEach((tensor, t) => {
      expect(tensor.dims).toEqual([1, HEADS, 8, DIM]);
      const expected = range(0, HEADS).flatMap((h) =>
        range(0, 8).flatMap((p) => range(0, DIM).map((d) => code(t, h, second[p] as number, d))),
      );
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(expected);
    });
    expect(cache.stats()).toMatchObject({ lookups: 1, hits: 1, tokensSaved: 8, blocks: 3 });
  });

  it('leaves at least the last token of a prompt to run, even when all of it is cached', async () => {
    const cache = cacheOf();
    const prompt = range(1, 13); // three whole blocks
    await cache.store(prompt, fakeState(prompt));
    expect((await cache.lookup(prompt))?.tokens).toBe(8);
    expect((await cache.lookup(range(1, 14)))?.tokens).toBe(12);
    // Shorter than what is cached: only its own whole blocks, minus the token to run.
    expect((await cache.lookup(range(1, 7)))?.tokens).toBe(4);
    expect(await cache.lookup(range(1, 5))).toBeUndefined();
  });

  it('misses on another prefix and skips prompts under minTokens entirely', async () => {
    const cache = cacheOf({ minTokens: 6 });
    const prompt = range(1, 13);
    await cache.store(prompt, fakeState(prompt));
    expect(await cache.lookup([0, ...range(2, 13)])).toBeUndefined();
    expect(await cache.lookup(range(1, 6))).toBeUndefined();
    await cache.store(range(50, 55), fakeState(range(50, 55)));
    expect(cache.stats()).toMatchObject({ lookups: 1, hits: 0, blocks: 3 });
  });

  it('stores only batches of one without padding', async () => {
    const cache = cacheOf();
    const padded = { ...fakeState(range(1, 9)), realTokens: [7] };
    await cache.store(range(1, 9), padded);
    expect(cache.stats().blocks).toBe(0);
  });

  it('copies float16 caches bit for bit', async () => {
    const cache = cacheOf({}, 'float16');
    const prompt = range(1, 10);
    const state = fakeState(prompt, 'float16');
    await cache.store(prompt, state);
    const hit = await cache.lookup(prompt);
    expect(hit?.tokens).toBe(8);
    hit?.state.past.forEach((tensor, t) => {
      expect(tensor.type).toBe('float16');
      const source = (state.past[t] as Tensor | undefined)?.data as Uint16Array;
      const expected = range(0, HEADS).flatMap((h) =>
        Array.from(source.subarray(h * 9 * DIM, (h * 9 + 8) * DIM)),
      );
      expect(Array.from((tensor as Tensor).data as Uint16Array)).toEqual(expected);
    });
  });

  it('stays under maxBytes, evicting the least recently used records before a shared template', async () => {
    // One block: 2 tensors x 2 heads x 4 tokens x 3 dims x 4 bytes = 192 bytes; room for 5.
    const cache = cacheOf({ maxBytes: 5 * 192 });
    const template = range(1, 9); // two blocks
    const record = (r: number): number[] => [...template, ...range(1000 * r, 1000 * r + 4), 0];
    for (let r = 1; r <= 6; r += 1) {
      const prompt = record(r);
      // Every request uses the template, as an enrichment route's do.
      if (r > 1) expect((await cache.lookup(prompt))?.tokens).toBe(8);
      await cache.store(prompt, fakeState(prompt));
      expect(cache.stats().bytes).toBeLessThanOrEqual(5 * 192);
    }
    // The template and the three latest records survive; the oldest records went first.
    expect((await cache.lookup(record(6)))?.tokens).toBe(12);
    expect((await cache.lookup(record(4)))?.tokens).toBe(12);
    expect((await cache.lookup(record(1)))?.tokens).toBe(8);
    expect((await cache.lookup(record(2)))?.tokens).toBe(8);
    expect(cache.stats()).toMatchObject({ blocks: 5, bytes: 5 * 192, evictions: 3 });
  });

  it('never stores a block it could not keep reachable, and maxBytes 0 stores nothing', async () => {
    // Room for two blocks: a three-block prompt keeps its first two.
    const small = cacheOf({ maxBytes: 2 * 192 });
    await small.store(range(1, 13), fakeState(range(1, 13)));
    expect(small.stats().blocks).toBe(2);
    expect((await small.lookup(range(1, 14)))?.tokens).toBe(8);
    const off = cacheOf({ maxBytes: 0 });
    await off.store(range(1, 13), fakeState(range(1, 13)));
    expect(await off.lookup(range(1, 13))).toBeUndefined();
    expect(off.stats()).toMatchObject({ lookups: 0, blocks: 0 });
  });

  it('validates its options once, naming the field', () => {
    expect(() => compilePrefixCacheOptions({ blockTokens: 0 }, 'generative.prefixCache')).toThrow(
      ConfigError,
    );
    expect(() => compilePrefixCacheOptions({ maxByte: 1 })).toThrow(/maxByte/);
    expect(compilePrefixCacheOptions(undefined)).toEqual({
      maxBytes: 128 * 1024 * 1024,
      blockTokens: 16,
      minTokens: 32,
      sharedInput: true,
    });
  });
});

describe('PrefixCache on an export with a shared-prefix input', () => {
  const sharedLayout: KvLayout = {
    ...layout(),
    prefixNames: ['prefix_key_values.0.key', 'prefix_key_values.0.value'],
  };
  const sharedCache = (options: PrefixCacheOptions = {}): PrefixCache =>
    new PrefixCache(
      sharedLayout,
      compilePrefixCacheOptions({ blockTokens: 4, minTokens: 4, ...options }),
    );
  /** A sequence's cache after a hit of `prefix` tokens and a prefill of the rest of `tokens`. */
  const afterHit = async (
    tokens: readonly number[],
    prefix: number,
    cache: PrefixCache,
  ): Promise<KvState> => {
    const hit = await cache.lookup(tokens);
    expect(hit?.tokens).toBe(prefix);
    const own = fakeState(tokens.slice(prefix));
    // The own columns' codes name their tokens, so where a block's columns came from shows.
    const shared = hit?.state.shared;
    if (shared === undefined) throw new Error('no shared prefix');
    return { ...own, realTokens: [tokens.length], shared };
  };

  it('hands a hit over as the shared prefix, the same object for every prompt reaching it', async () => {
    const cache = sharedCache();
    const first = [...range(100, 110), 1, 2, 3];
    await cache.store(first, fakeState(first));
    const a = await cache.lookup([...range(100, 110), 7, 8, 9]);
    const b = await cache.lookup([...range(100, 110), 4, 5]);
    expect(a?.tokens).toBe(8);
    expect(a?.state).toMatchObject({ batch: 1, pastLength: 0, realTokens: [8] });
    expect(a?.state.past.map((t) => t.dims)).toEqual([
      [1, HEADS, 0, DIM],
      [1, HEADS, 0, DIM],
    ]);
    expect(a?.state.shared?.length).toBe(8);
    expect(b?.state.shared).toBe(a?.state.shared);
    a?.state.shared?.past.forEach((tensor, t) => {
      const expected = range(0, HEADS).flatMap((h) =>
        range(0, 8).flatMap((p) => range(0, DIM).map((d) => code(t, h, 100 + p, d))),
      );
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(expected);
    });
    // The assembled prefix counts against maxBytes: 2 blocks of 192 bytes beside the 3 stored.
    expect(cache.stats()).toMatchObject({ blocks: 3, bytes: 5 * 192 });
    // sharedInput false copies hits into the row's own past, as on an export without the input.
    const copying = sharedCache({ sharedInput: false });
    await copying.store(first, fakeState(first));
    const copied = await copying.lookup([...range(100, 110), 7, 8, 9]);
    expect(copied?.state.shared).toBeUndefined();
    expect(copied?.state.pastLength).toBe(8);
  });

  it('shares the prefix already handed out and copies deeper blocks into the row', async () => {
    const cache = sharedCache();
    const template = range(1, 9);
    const first = [...template, 20, 21, 22, 23, 24, 25, 0];
    await cache.store(first, fakeState(first));
    const shallow = await cache.lookup([...template, 30, 31]);
    expect(shallow?.state.shared?.length).toBe(8);
    // Begins like `first` past the template: three blocks match, the template's two are shared.
    const deep = await cache.lookup([...template, 20, 21, 22, 23, 40]);
    expect(deep?.tokens).toBe(12);
    expect(deep?.state.shared).toBe(shallow?.state.shared);
    expect(deep?.state).toMatchObject({ pastLength: 4, realTokens: [12] });
    expect(deep?.state.attentionMask).toEqual([[1, 1, 1, 1]]);
    deep?.state.past.forEach((tensor, t) => {
      const expected = range(0, HEADS).flatMap((h) =>
        range(20, 24).flatMap((token) => range(0, DIM).map((d) => code(t, h, token, d))),
      );
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(expected);
    });
  });

  it('copies a hit whose path ends where the trie does (it may still be growing)', async () => {
    const cache = sharedCache();
    const template = range(1, 9);
    await cache.store([...template, 0], fakeState([...template, 0]));
    const hit = await cache.lookup([...template, 50, 51]);
    expect(hit?.state.shared).toBeUndefined();
    expect(hit?.state.pastLength).toBe(8);
  });

  it('finds the shared prefix a row without one can move onto (sharedFor, moveOntoPrefix)', async () => {
    const cache = sharedCache();
    const template = range(1, 9);
    const first = [...template, 20, 21, 22, 23, 0];
    await cache.store(first, fakeState(first));
    const shared = (await cache.lookup([...template, 30, 31]))?.state.shared;
    expect(shared?.length).toBe(8);
    // A two-row left-padded batch: row 1 is `first`'s 13 tokens behind 2 padding columns.
    const other = fakeState(range(70, 85));
    const row = fakeState(first);
    const batch: KvState = {
      batch: 2,
      past: other.past.map((tensor, t) => {
        const a = (tensor as Tensor).data as Float32Array;
        const b = (row.past[t] as Tensor | undefined)?.data as Float32Array;
        const data = new Float32Array(2 * HEADS * 15 * DIM);
        data.set(a, 0);
        for (let h = 0; h < HEADS; h += 1)
          data.set(b.subarray(h * 13 * DIM, (h + 1) * 13 * DIM), ((HEADS + h) * 15 + 2) * DIM);
        return new Tensor('float32', data, [2, HEADS, 15, DIM]);
      }),
      pastLength: 15,
      attentionMask: [
        Array.from({ length: 15 }, () => 1),
        [0, 0, ...Array.from({ length: 13 }, () => 1)],
      ],
      realTokens: [15, 13],
    };
    const found = cache.sharedFor(first, batch, 1);
    expect(found).toBe(shared);
    if (found === undefined) throw new Error('no shared prefix found');
    const moved = moveOntoPrefix(sharedLayout, batch, 1, found);
    expect(moved.shared).toBe(shared);
    expect(moved).toMatchObject({ batch: 1, pastLength: 5, realTokens: [13] });
    expect(moved?.attentionMask).toEqual([[1, 1, 1, 1, 1]]);
    moved?.past.forEach((tensor, t) => {
      const expected = range(0, HEADS).flatMap((h) =>
        [20, 21, 22, 23, 0].flatMap((token) => range(0, DIM).map((d) => code(t, h, token, d))),
      );
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(expected);
    });
    // Another prompt, a row that already has a shared prefix, a copying cache: nothing to move.
    expect(cache.sharedFor(range(70, 85), batch, 0)).toBeUndefined();
    expect(
      cache.sharedFor(first, { ...fakeState(range(20, 25)), realTokens: [13], shared: found }, 0),
    ).toBeUndefined();
    const copying = sharedCache({ sharedInput: false });
    await copying.store(first, fakeState(first));
    expect(copying.sharedFor(first, fakeState(first), 0)).toBeUndefined();
    // And back: the prefix spliced in front of the row's own columns is the row as it was.
    const back = withoutPrefix(sharedLayout, moved, 0);
    expect(back).toMatchObject({ batch: 1, pastLength: 13, realTokens: [13] });
    expect(back.shared).toBeUndefined();
    back.past.forEach((tensor, t) =>
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(
        Array.from((row.past[t] as Tensor | undefined)?.data as Float32Array),
      ),
    );
  });

  it("stores the blocks after a shared prefix from the row's own columns", async () => {
    const cache = sharedCache();
    const template = range(1, 9);
    await cache.store(
      [...template, 90, 91, 92, 93, 0],
      fakeState([...template, 90, 91, 92, 93, 0]),
    );
    const prompt = [...template, ...range(50, 59)];
    await cache.store(prompt, await afterHit(prompt, 8, cache));
    const hit = await cache.lookup([...prompt, 99]);
    expect(hit?.tokens).toBe(16);
    expect(hit?.state.shared?.length).toBe(8);
    // Blocks 2 and 3 came from the row's own columns (codes of tokens 50..57), not the template.
    hit?.state.past.forEach((tensor, t) => {
      const expected = range(0, HEADS).flatMap((h) =>
        range(8, 16).flatMap((p) => range(0, DIM).map((d) => code(t, h, prompt[p] as number, d))),
      );
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(expected);
    });
    // A state whose own columns do not reach its real token count is padded: not stored.
    const padded = { ...(await afterHit(prompt, 16, cache)), realTokens: [17] };
    const before = cache.stats().blocks;
    await cache.store([...prompt, 7, 7, 7, 7], padded);
    expect(cache.stats().blocks).toBe(before);
  });

  it('keeps an assembled prefix as long as its block, evicting leaves before it', async () => {
    // Room for 6 blocks: 3 stored, the template's assembled prefix (2), then the records'.
    const cache = sharedCache({ maxBytes: 6 * 192 });
    const template = range(1, 9);
    await cache.store(
      [...template, 90, 91, 92, 93, 0],
      fakeState([...template, 90, 91, 92, 93, 0]),
    );
    const shared = (await cache.lookup([...template, 5]))?.state.shared;
    if (shared === undefined) throw new Error('no shared prefix');
    expect(cache.stats()).toMatchObject({ blocks: 3, bytes: 5 * 192 });
    for (const record of [60, 70, 80]) {
      const prompt = [...template, ...range(record, record + 4), 0];
      await cache.store(prompt, {
        ...fakeState(range(record, record + 5)),
        realTokens: [13],
        shared,
      });
      expect(cache.stats().bytes).toBeLessThanOrEqual(6 * 192);
      // Every record's lookup still gets the same prefix object.
      expect((await cache.lookup([...template, 7]))?.state.shared).toBe(shared);
    }
    expect(cache.stats()).toMatchObject({ blocks: 4, bytes: 6 * 192, evictions: 2 });
  });
});

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const TEMPLATE =
  'You label support e-mails. Read the message below and answer with one word: billing, bug, ' +
  'account or other. Message:';
const RECORDS = [
  ' My invoice is wrong again.',
  ' The app crashes when I log in',
  ' Please close my account, I am moving abroad next month and will not need it.',
  ' Refund?',
  ' Hello',
];
// minNewTokens: the weights are random, so EOS could otherwise end a comparison after a token.
const GREEDY = { maxNewTokens: 20, minNewTokens: 20 };
const SMALL: PrefixCacheOptions = { blockTokens: 4, minTokens: 8 };

describe('prefix cache on the tiny Llama: token-identical greedy output', () => {
  const store = new ModelStore();
  let model: LoadedModel;
  let plain: TextGenerationPipeline;
  const expected = new Map<string, number[]>();
  const without = async (prompt: string): Promise<number[]> => {
    const known = expected.get(prompt);
    if (known !== undefined) return known;
    const ids = (await plain.generate(prompt, GREEDY)).tokenIds;
    expected.set(prompt, ids);
    return ids;
  };
  const cached = (options: PrefixCacheOptions = SMALL): TextGenerationPipeline =>
    new TextGenerationPipeline(model, {}, { prefixCache: options });

  beforeAll(async () => {
    model = await store.load({ path: MODEL });
    plain = new TextGenerationPipeline(model);
  });
  afterAll(() => store.close());

  it('holds the keys and values that prefilling the prefix itself gives', async () => {
    const gen = cached();
    const prompt = await gen.promptIds({ kind: 'text', text: TEMPLATE + RECORDS[0] }, undefined);
    await gen.generate(TEMPLATE + RECORDS[0], { maxNewTokens: 1 });
    const hit = await gen.prefixCache?.lookup(prompt);
    expect(hit?.tokens).toBe(Math.floor((prompt.length - 1) / 4) * 4);
    const direct = await runStep(model.session, gen.layout, emptyKvState(gen.layout, 1), {
      ids: [prompt.slice(0, hit?.tokens)],
    });
    // The path ends where the trie does, so the hit is copied, not shared: its own past.
    expect(hit?.state.shared).toBeUndefined();
    hit?.state.past.forEach((tensor, t) => {
      const want = (direct.state.past[t] as Tensor | undefined)?.data as Float32Array;
      const got = (tensor as Tensor).data as Float32Array;
      expect(got.length).toBe(want.length);
      expect(Math.max(...got.map((v, i) => Math.abs(v - (want[i] as number))))).toBeLessThan(1e-5);
    });
  });

  it('same instruction, different records', async () => {
    const gen = cached();
    for (const record of RECORDS)
      expect((await gen.generate(TEMPLATE + record, GREEDY)).tokenIds, record).toEqual(
        await without(TEMPLATE + record),
      );
    const template = (await gen.promptIds({ kind: 'text', text: TEMPLATE }, undefined)).length;
    const stats = gen.prefixCache?.stats();
    expect(stats).toMatchObject({ lookups: RECORDS.length, hits: RECORDS.length - 1 });
    // Every later record reused the template's whole blocks at least.
    expect(stats?.tokensSaved).toBeGreaterThanOrEqual(
      (RECORDS.length - 1) * Math.floor(template / 4) * 4,
    );
  });

  it('a prompt equal to a cached prefix, and one shorter than it', async () => {
    const gen = cached();
    await gen.generate(TEMPLATE + RECORDS[2], GREEDY);
    const short = 'You label support e-mails. Read the message';
    const shortIds = await gen.promptIds({ kind: 'text', text: short }, undefined);
    const templateIds = await gen.promptIds({ kind: 'text', text: TEMPLATE }, undefined);
    // The premise: both prompts' ids begin the cached prompt's.
    const long = await gen.promptIds({ kind: 'text', text: TEMPLATE + RECORDS[2] }, undefined);
    expect(long.slice(0, shortIds.length)).toEqual(shortIds);
    expect(long.slice(0, templateIds.length)).toEqual(templateIds);
    for (const prompt of [TEMPLATE, short, TEMPLATE]) {
      const before = gen.prefixCache?.stats().hits ?? 0;
      expect((await gen.generate(prompt, GREEDY)).tokenIds, prompt).toEqual(await without(prompt));
      expect(gen.prefixCache?.stats().hits).toBe(before + 1);
    }
  });

  it('evicts under a tiny maxBytes and still gives the same tokens', async () => {
    // 2 layers x key/value x 2 KV heads x 4 tokens x 16 dims x 4 bytes = 2 KiB a block: room for
    // 6 blocks, less than one prompt.
    const gen = cached({ ...SMALL, maxBytes: 6 * 2048 });
    const prompts = [
      ...RECORDS.map((r) => TEMPLATE + r),
      ...RECORDS.map((r) => `Translate to French.${r}`),
      TEMPLATE + RECORDS[0],
    ];
    for (const prompt of prompts)
      expect((await gen.generate(prompt, GREEDY)).tokenIds, prompt).toEqual(await without(prompt));
    const stats = gen.prefixCache?.stats();
    expect(stats?.bytes).toBeLessThanOrEqual(6 * 2048);
    expect(stats?.evictions).toBeGreaterThan(0);
    expect(stats?.hits).toBeGreaterThan(2);
  });

  /** Drives the step loop; `arrivals[s]` are submitted just before step s. */
  async function drive(
    pipeline: TextGenerationPipeline,
    limits: SchedulerOptions,
    arrivals: Record<number, SubmitRequest[]>,
  ): Promise<Map<number, GenerationResult>> {
    const loop = new GenerationLoop(pipeline, compileSchedulerOptions(limits));
    const last = Math.max(...Object.keys(arrivals).map(Number));
    const results = new Map<number, GenerationResult>();
    for (let step = 0; step <= last || !loop.idle; step += 1) {
      for (const request of arrivals[step] ?? []) await loop.submit(request);
      for (const event of await loop.step()) {
        if (event.kind === 'done') results.set(event.id, event.result);
        if (event.kind === 'failed') throw new Error(event.error.message);
      }
      if (step > 1000) throw new Error('the loop did not finish');
    }
    return results;
  }

  for (const [decodeRunCostTokens, sharedInput] of [
    [1e9, true],
    [0, true],
    [1e9, false],
  ] as const)
    it(`interleaved in the engine's step loop (decodeRunCostTokens ${decodeRunCostTokens}, sharedInput ${sharedInput})`, async () => {
      const request = (id: number, input: string, maxNewTokens = 20): SubmitRequest => ({
        id,
        input,
        options: { maxNewTokens, minNewTokens: maxNewTokens },
      });
      // Prompts prefill in 12-token chunks while others decode; later ones start from the blocks
      // the first one stored chunk by chunk, some before its prefill has ended.
      const arrivals: Record<number, SubmitRequest[]> = {
        0: [request(0, TEMPLATE + RECORDS[0]), request(100, 'Hi there', 6)],
        1: [request(1, TEMPLATE + RECORDS[1])],
        2: [request(2, TEMPLATE + RECORDS[2])],
        5: [request(3, TEMPLATE), request(4, TEMPLATE + RECORDS[3])],
        9: [request(5, TEMPLATE + RECORDS[4], 9)],
      };
      const limits = { maxActive: 4, stepTokens: 12, maxKvTokens: 400, decodeRunCostTokens };
      const gen = cached({ ...SMALL, sharedInput });
      const [withCache, plainRun] = [
        await drive(gen, limits, arrivals),
        await drive(plain, limits, arrivals),
      ];
      expect(withCache.size).toBe(7);
      for (const [id, result] of plainRun)
        expect(withCache.get(id)?.tokenIds, `request ${id}`).toEqual(result.tokenIds);
      // And both equal the single-request path, so the comparison is not of two wrong runs.
      expect(plainRun.get(1)?.tokenIds).toEqual(await without(TEMPLATE + RECORDS[1]));
      const stats = gen.prefixCache?.stats();
      expect(stats?.hits).toBeGreaterThanOrEqual(4);
      expect(stats?.tokensSaved).toBeGreaterThan(4 * 32);
      // Shared: the template's blocks were also assembled once as the export's shared prefix.
      if (sharedInput) expect(stats?.bytes).toBeGreaterThan((stats?.blocks ?? 0) * 2048);
      else expect(stats?.bytes).toBe((stats?.blocks ?? 0) * 2048);
    });

  it('cache hits take only their uncached tokens from a step, so several prefill in one', async () => {
    const gen = cached();
    const prompts = [RECORDS[0], RECORDS[1], RECORDS[3]].map((r) => TEMPLATE + r);
    const ids = await Promise.all(
      prompts.map((text) => gen.promptIds({ kind: 'text', text }, undefined)),
    );
    const template = (await gen.promptIds({ kind: 'text', text: TEMPLATE }, undefined)).length;
    const shared = Math.floor(template / 4) * 4;
    // Room for the three prompts' uncached tails, not for one whole prompt: planned before the
    // lookup, the first would have taken all of it.
    const budget = ids.reduce((n, p) => n + p.length - shared, 0);
    expect(budget).toBeLessThan(Math.min(...ids.map((p) => p.length)));
    const loop = new GenerationLoop(
      gen,
      compileSchedulerOptions({ maxActive: 4, stepTokens: budget, maxKvTokens: 400 }),
    );
    await loop.submit({ id: 9, input: TEMPLATE + RECORDS[2], options: GREEDY });
    while (!loop.idle) await loop.step();
    for (const [id, input] of prompts.entries()) await loop.submit({ id, input, options: GREEDY });
    const first = await loop.step();
    expect(first.filter((e) => e.kind === 'token').map((e) => e.id)).toEqual([0, 1, 2]);
    const results = new Map<number, number[]>();
    for (let step = 0; !loop.idle; step += 1) {
      for (const event of await loop.step())
        if (event.kind === 'done') results.set(event.id, event.result.tokenIds);
      if (step > 100) throw new Error('the loop did not finish');
    }
    for (const [id, prompt] of prompts.entries())
      expect(results.get(id), prompt).toEqual(await without(prompt));
  });

  it('through the engine’s generation thread, with its counters in stats()', async () => {
    const engine = await GenerativeEngine.start({
      model: { path: MODEL },
      scheduler: { maxActive: 3, stepTokens: 16, maxKvTokens: 400 },
      intraOpThreads: 1,
      prefixCache: SMALL,
    });
    try {
      const prompts = RECORDS.map((r) => TEMPLATE + r);
      const results = await Promise.all(
        prompts.map((p) => engine.submit(p, { generation: GREEDY }).result),
      );
      for (const [i, result] of results.entries())
        expect(result.tokenIds, prompts[i]).toEqual(await without(prompts[i] as string));
      const { prefixCache } = engine.stats();
      expect(prefixCache.lookups).toBe(RECORDS.length);
      expect(prefixCache.hits).toBeGreaterThanOrEqual(RECORDS.length - 1);
      expect(prefixCache.tokensSaved).toBeGreaterThanOrEqual((RECORDS.length - 1) * 40);
      // The blocks, and the template's blocks assembled once as the shared prefix.
      expect(prefixCache.bytes).toBeGreaterThan(prefixCache.blocks * 2048);
      expect(prefixCache.bytes % 2048).toBe(0);
    } finally {
      await engine.close('drain');
    }
  });
});
