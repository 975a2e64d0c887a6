// The cache of an appending export (step_key_values.* out): the step's columns are written into
// the state's buffers where they fit, a full buffer is copied once into a wider one, the mask
// hides the spare columns, and re-assembling or dropping rows reads rows `capacity` apart.
import { describe, expect, it } from 'vitest';
import { assembleRows, dropRows } from '../../../src/generative/kv-batch.ts';
import {
  advance,
  APPEND_COLUMNS,
  capacityOf,
  stepFeeds,
  type KvLayout,
  type KvState,
} from '../../../src/pipelines/generation/kv-cache.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';

const HEADS = 2;
const DIM = 3;
const layout: KvLayout = {
  pastNames: ['past_key_values.0.key', 'past_key_values.0.value'],
  presentNames: ['step_key_values.0.key', 'step_key_values.0.value'],
  prefixNames: [],
  kvHeads: HEADS,
  headDim: DIM,
  dtype: 'float32',
  logitsName: 'logits',
  hasPositionIds: true,
  hasUseCacheBranch: false,
  appending: true,
};

/** A value naming its tensor, row, head, column and dimension (column 9 and up: spare). */
const value = (t: number, r: number, h: number, c: number, d: number): number =>
  1 + t * 10_000 + r * 1000 + h * 100 + c * 10 + d;

/** `batch` rows with `filled` columns each in buffers of `capacity` columns (spare ones zero). */
function bufferState(batch: number, filled: number, capacity: number): KvState {
  const past = [0, 1].map((t) => {
    const data = new Float32Array(batch * HEADS * capacity * DIM);
    for (let r = 0; r < batch; r += 1)
      for (let h = 0; h < HEADS; h += 1)
        for (let c = 0; c < filled; c += 1)
          for (let d = 0; d < DIM; d += 1)
            data[((r * HEADS + h) * capacity + c) * DIM + d] = value(t, r, h, c, d);
    return new Tensor('float32', data, [batch, HEADS, capacity, DIM]);
  });
  return {
    batch,
    past,
    pastLength: filled,
    attentionMask: Array.from({ length: batch }, (_, r) =>
      Array.from({ length: filled }, (_, c) => (r === 1 && c === 0 ? 0 : 1)),
    ),
    realTokens: Array.from({ length: batch }, (_, r) => (r === 1 ? filled - 1 : filled)),
  };
}

/** The step's outputs: one new column per row, coded as column `column`. */
function stepOutputs(batch: number, column: number): Record<string, Tensor> {
  return Object.fromEntries(
    layout.presentNames.map((name, t) => [
      name,
      new Tensor(
        'float32',
        Float32Array.from({ length: batch * HEADS * DIM }, (_, i) =>
          value(t, Math.floor(i / (HEADS * DIM)), Math.floor(i / DIM) % HEADS, column, i % DIM),
        ),
        [batch, HEADS, 1, DIM],
      ),
    ]),
  );
}

/** Row r's columns [0, count) of tensor t, read `capacityOf(state)` apart. */
function columns(state: KvState, t: number, r: number, count: number): number[] {
  const data = (state.past[t] as Tensor | undefined)?.data as Float32Array;
  const capacity = capacityOf(state);
  const out: number[] = [];
  for (let h = 0; h < HEADS; h += 1)
    for (let c = 0; c < count; c += 1)
      for (let d = 0; d < DIM; d += 1) out.push(data[((r * HEADS + h) * capacity + c) * DIM + d]!);
  return out;
}

const expected = (t: number, r: number, count: number, shift = 0): number[] =>
  [0, 1].flatMap((h) =>
    Array.from({ length: count }, (_, c) => c).flatMap((c) =>
      [0, 1, 2].map((d) => value(t, r, h, c + shift, d)),
    ),
  );

const tokens = (batch: number) => ({ ids: Array.from({ length: batch }, () => [7]) });

describe('appending cache', () => {
  it("masks a buffer's spare columns and puts the step's after the capacity", () => {
    const feeds = stepFeeds(layout, bufferState(2, 3, 5), tokens(2));
    expect(feeds['attention_mask']?.dims).toEqual([2, 6]);
    expect(
      Array.from((feeds['attention_mask'] as Tensor | undefined)?.data as BigInt64Array, Number),
    ).toEqual([...[1, 1, 1, 0, 0, 1], ...[0, 1, 1, 0, 0, 1]]);
    expect(feeds['past_key_values.0.key']?.dims).toEqual([2, HEADS, 5, DIM]);
    // Positions count real tokens, not columns.
    expect(
      Array.from((feeds['position_ids'] as Tensor | undefined)?.data as BigInt64Array, Number),
    ).toEqual([3, 2]);
  });

  it("writes the step's columns into the buffers in place while they fit", () => {
    const before = bufferState(2, 3, 5);
    const storage = before.past.map((t) => (t as Tensor).data);
    const after = advance(layout, before, tokens(2), stepOutputs(2, 3));
    expect(after.pastLength).toBe(4);
    expect(capacityOf(after)).toBe(5);
    after.past.forEach((tensor, t) => expect((tensor as Tensor).data).toBe(storage[t]));
    for (const t of [0, 1])
      for (const r of [0, 1]) expect(columns(after, t, r, 4)).toEqual(expected(t, r, 4));
    expect(after.attentionMask).toEqual([
      [1, 1, 1, 1],
      [0, 1, 1, 1],
    ]);
    expect(after.realTokens).toEqual([4, 3]);
  });

  it('copies a full buffer once into one APPEND_COLUMNS wider and leaves the old one as it was', () => {
    const before = bufferState(2, 3, 3);
    const snapshot = before.past.map((t) => Array.from((t as Tensor).data as Float32Array));
    const after = advance(layout, before, tokens(2), stepOutputs(2, 3));
    expect(capacityOf(after)).toBe(4 + APPEND_COLUMNS);
    expect(after.past[0]?.dims).toEqual([2, HEADS, 4 + APPEND_COLUMNS, DIM]);
    for (const t of [0, 1])
      for (const r of [0, 1]) expect(columns(after, t, r, 4)).toEqual(expected(t, r, 4));
    // A buffer without spare columns (a prefix-cache hit, say) is never written.
    before.past.forEach((tensor, t) =>
      expect(Array.from((tensor as Tensor).data as Float32Array)).toEqual(snapshot[t]),
    );
    // The new spare columns are zeros.
    const data = (after.past[0] as Tensor | undefined)?.data as Float32Array;
    expect(data[(0 * HEADS * capacityOf(after) + 4) * DIM]).toBe(0);
  });

  it('re-assembles rows read capacity apart into buffers with spare columns', () => {
    const source = bufferState(3, 4, 9);
    const state = assembleRows(layout, [
      { state: source, row: 2 },
      { state: source, row: 1 },
    ]);
    expect(state.pastLength).toBe(4);
    expect(capacityOf(state)).toBe(4 + APPEND_COLUMNS);
    expect(columns(state, 1, 0, 4)).toEqual(expected(1, 2, 4));
    // Row 1 of the source had a padding column first: its span of 3 is right-aligned.
    expect(columns(state, 0, 1, 4)).toEqual(
      [0, 1].flatMap((h) => [
        ...[0, 0, 0],
        ...[1, 2, 3].flatMap((c) => [0, 1, 2].map((d) => value(0, 1, h, c, d))),
      ]),
    );
    expect(state.attentionMask).toEqual([
      [1, 1, 1, 1],
      [0, 1, 1, 1],
    ]);
  });

  it('drops rows in place, moving whole buffers rows', () => {
    const before = bufferState(3, 2, 6);
    const { state: after, from } = dropRows(layout, before, new Set([0]));
    expect(from).toEqual([2, 1]);
    expect(capacityOf(after)).toBe(6);
    expect(after.past[0]?.dims).toEqual([2, HEADS, 6, DIM]);
    expect(columns(after, 0, 0, 2)).toEqual(expected(0, 2, 2));
    expect(columns(after, 1, 1, 2)).toEqual(expected(1, 1, 2));
  });
});
