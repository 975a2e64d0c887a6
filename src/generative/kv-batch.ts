// Re-assembles the decode batch's KV cache when its membership changes. The batch is one
// left-padded KvState whose tensors are the model's own presents from the last step; rows are
// copied only when a sequence joins (its prefilled cache is spliced in) or leaves. Each row keeps
// only its real span: leading columns that are padding in every row are dropped, so the batch's
// past length is the longest live row's, not the longest ever seen. docs/generative.md has the
// measurement that chose this over concatenating per-sequence caches every step.
import { Tensor } from 'onnxruntime-node';
import { emptyKvState, type KvLayout, type KvState } from '../pipelines/generation/kv-cache.ts';
import { allocateCache, cacheBits } from '../pipelines/generation/kv-dtype.ts';

/** One row of an existing state: the decode batch's row, or row 0 of a prefilled sequence. */
export interface KvRowRef {
  state: KvState;
  row: number;
}

/** A new left-padded batch holding the given rows, in the given order. */
export function assembleRows(layout: KvLayout, rows: readonly KvRowRef[]): KvState {
  if (rows.length === 0) return emptyKvState(layout, 0);
  const spans = rows.map(({ state, row }) => realSpan(state, row));
  const length = spans.reduce((max, s) => Math.max(max, s), 0);
  const { kvHeads: heads, headDim: dim } = layout;
  const past = layout.pastNames.map((name, t) => {
    // Padding columns are never attended to, but zeros keep them finite for every kernel.
    const out = allocateCache(layout.dtype, rows.length * heads * length * dim);
    rows.forEach(({ state, row }, r) => {
      const source = cacheBits(state.past[t], name);
      const span = spans[r] as number;
      const skip = state.pastLength - span;
      for (let h = 0; h < heads; h += 1) {
        const from = ((row * heads + h) * state.pastLength + skip) * dim;
        const to = ((r * heads + h) * length + length - span) * dim;
        out.set(source.subarray(from, from + span * dim), to);
      }
    });
    return new Tensor(layout.dtype, out, [rows.length, heads, length, dim]);
  });
  return {
    batch: rows.length,
    past,
    pastLength: length,
    attentionMask: rows.map(({ state, row }, r) => {
      const span = spans[r] as number;
      const mask = state.attentionMask[row] ?? [];
      return [...Array.from({ length: length - span }, () => 0), ...mask.slice(mask.length - span)];
    }),
    realTokens: rows.map(({ state, row }) => state.realTokens[row] ?? 0),
  };
}

/** The row's cached columns from its first real token on: what must survive a re-assembly. */
export function realSpan(state: KvState, row: number): number {
  const mask = state.attentionMask[row] ?? [];
  const first = mask.indexOf(1);
  return first < 0 ? 0 : state.pastLength - first;
}
