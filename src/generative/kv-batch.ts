// Re-assembles the decode batch's KV cache when its membership changes. The batch is one
// left-padded KvState whose tensors are the model's own presents from the last step; rows are
// copied only when a sequence joins (its prefilled cache is spliced in; `assembleRows`) or leaves
// (`dropRows`, which moves one row per leaver within the same storage). Each row keeps
// only its real span: leading columns that are padding in every row are dropped, so the batch's
// past length is the longest live row's, not the longest ever seen. docs/generative.md has the
// measurement that chose this over concatenating per-sequence caches every step. Rows of one
// batch share one shared prefix (or none): it is fed once per run, never copied into the rows.
// Rows are `capacityOf` columns apart in storage: an appending export's buffers have spare ones.
import { Tensor } from '../runtime/tensor.ts';
import { InferenceError } from '../errors.ts';
import {
  APPEND_COLUMNS,
  capacityOf,
  emptyKvState,
  realSpan,
  type KvLayout,
  type KvState,
  type SharedPrefix,
} from '../pipelines/generation/kv-cache.ts';
import { allocateCache, cacheBits } from '../pipelines/generation/kv-dtype.ts';

/** One row of an existing state: the decode batch's row, or row 0 of a prefilled sequence. */
export interface KvRowRef {
  state: KvState;
  row: number;
}

/**
 * A new left-padded batch holding the given rows, in the given order. For an appending export
 * its buffers get APPEND_COLUMNS spare columns, so that the next steps write in place.
 */
export function assembleRows(layout: KvLayout, rows: readonly KvRowRef[]): KvState {
  if (rows.length === 0) return emptyKvState(layout, 0);
  const batch = assembledRows(rows);
  const { spans, pastLength: length } = batch;
  const capacity = length + (layout.appending ? APPEND_COLUMNS : 0);
  const { kvHeads: heads, headDim: dim } = layout;
  const past = layout.pastNames.map((name, t) => {
    // Padding columns are never attended to, but zeros keep them finite for every kernel.
    const out = allocateCache(layout.dtype, rows.length * heads * capacity * dim);
    rows.forEach(({ state, row }, r) => {
      const source = cacheBits(state.past[t], name);
      const stride = capacityOf(state);
      const span = spans[r] as number;
      const skip = state.pastLength - span;
      for (let h = 0; h < heads; h += 1) {
        const from = ((row * heads + h) * stride + skip) * dim;
        const to = ((r * heads + h) * capacity + length - span) * dim;
        out.set(source.subarray(from, from + span * dim), to);
      }
    });
    return new Tensor(layout.dtype, out, [rows.length, heads, capacity, dim]);
  });
  return { ...batch.state, past };
}

/**
 * What a left-padded batch of `rows` is, whatever holds its cache: each row keeps its real span,
 * the batch is as long as the longest, and the masks and positions follow. `state` lacks `past`.
 */
export function assembledRows(rows: readonly KvRowRef[]): {
  spans: number[];
  pastLength: number;
  state: Omit<KvState, 'past'>;
} {
  const shared = rows[0]?.state.shared;
  if (rows.some(({ state }) => state.shared !== shared))
    throw new InferenceError('rows of one decode batch must share one shared prefix');
  const spans = rows.map(({ state, row }) => realSpan(state, row));
  const length = spans.reduce((max, s) => Math.max(max, s), 0);
  return {
    spans,
    pastLength: length,
    state: {
      batch: rows.length,
      ...(shared === undefined ? {} : { shared }),
      pastLength: length,
      attentionMask: rows.map(({ state, row }, r) => {
        const span = spans[r] as number;
        const mask = state.attentionMask[row] ?? [];
        return [
          ...Array.from({ length: length - span }, () => 0),
          ...mask.slice(mask.length - span),
        ];
      }),
      realTokens: rows.map(({ state, row }) => state.realTokens[row] ?? 0),
    },
  };
}

/** A batch with some rows removed, and which of the old rows each new row is. */
export interface DroppedRows {
  state: KvState;
  /** `from[r]` is the old index of new row r. */
  from: number[];
}

/**
 * The batch without the rows in `drop`, made in place: each removed row's slot below the new
 * batch size takes one of the rows above it, and the tensors become views of their first rows.
 * One row is copied per removed row (none when the removed rows were the last ones), where a
 * re-assembly copies every row; the batch keeps its past length, so columns that only the
 * removed rows used stay as padding until the next re-assembly. The state must own its tensors'
 * storage (the model's presents or a re-assembly), as the decode groups' states do.
 */
export function dropRows(layout: KvLayout, state: KvState, drop: ReadonlySet<number>): DroppedRows {
  const size = state.batch - drop.size;
  const from = Array.from({ length: size }, (_, r) => r);
  const holes = [...drop].filter((r) => r < size).sort((a, b) => a - b);
  const movers: number[] = [];
  for (let r = size; r < state.batch; r += 1) if (!drop.has(r)) movers.push(r);
  holes.forEach((hole, i) => (from[hole] = movers[i] as number));
  const { kvHeads: heads, headDim: dim } = layout;
  const capacity = capacityOf(state);
  const rowSize = heads * capacity * dim;
  const past = layout.pastNames.map((name, t) => {
    const data = cacheBits(state.past[t], name);
    holes.forEach((hole, i) => {
      const mover = movers[i] as number;
      data.copyWithin(hole * rowSize, mover * rowSize, (mover + 1) * rowSize);
    });
    return new Tensor(layout.dtype, data.subarray(0, size * rowSize), [size, heads, capacity, dim]);
  });
  return {
    state: {
      batch: size,
      ...(state.shared === undefined ? {} : { shared: state.shared }),
      past,
      pastLength: state.pastLength,
      attentionMask: from.map((r) => state.attentionMask[r] ?? []),
      realTokens: from.map((r) => state.realTokens[r] ?? 0),
    },
    from,
  };
}

/**
 * Row `row` of a state without a shared prefix as a batch of one on `shared`, whose positions
 * are the row's first `shared.length`: the row keeps only its columns after them.
 */
export function moveOntoPrefix(
  layout: KvLayout,
  state: KvState,
  row: number,
  shared: SharedPrefix,
): KvState {
  const moved = movedOntoPrefix(state, row, shared);
  return {
    ...moved.state,
    past: copyColumns(layout, state, row, moved.skip, moved.state.pastLength),
  };
}

/**
 * What moveOntoPrefix makes, whatever holds the cache: the batch of one without `past`, which
 * holds the row's columns [skip, state.pastLength).
 */
export function movedOntoPrefix(
  state: KvState,
  row: number,
  shared: SharedPrefix,
): { skip: number; state: Omit<KvState, 'past'> } {
  const span = realSpan(state, row);
  const own = span - shared.length;
  if (state.shared !== undefined || own < 0)
    throw new InferenceError('a row moves onto a shared prefix only from a cache without one');
  const skip = state.pastLength - own;
  return {
    skip,
    state: {
      batch: 1,
      shared,
      pastLength: own,
      attentionMask: [(state.attentionMask[row] ?? []).slice(skip)],
      realTokens: [state.realTokens[row] ?? 0],
    },
  };
}

/** Row `row` of a state with a shared prefix as a batch of one holding the prefix's columns too. */
export function withoutPrefix(layout: KvLayout, state: KvState, row: number): KvState {
  const shared = state.shared;
  if (shared === undefined) return assembleRows(layout, [{ state, row }]);
  const moved = movedOffPrefix(state, row);
  const { span } = moved;
  const length = moved.state.pastLength;
  const { kvHeads: heads, headDim: dim } = layout;
  const past = layout.pastNames.map((name, t) => {
    const out = allocateCache(layout.dtype, heads * length * dim);
    const prefix = cacheBits(shared.past[t], name);
    const source = cacheBits(state.past[t], name);
    const stride = capacityOf(state);
    for (let h = 0; h < heads; h += 1) {
      const from = ((row * heads + h) * stride + state.pastLength - span) * dim;
      out.set(
        prefix.subarray(h * shared.length * dim, (h + 1) * shared.length * dim),
        h * length * dim,
      );
      out.set(source.subarray(from, from + span * dim), (h * length + shared.length) * dim);
    }
    return new Tensor(layout.dtype, out, [1, heads, length, dim]);
  });
  return { ...moved.state, past };
}

/**
 * What withoutPrefix makes of a row of a state on a shared prefix, whatever holds the cache: the
 * batch of one without `past`, which holds the prefix's columns, then the row's last `span`.
 */
export function movedOffPrefix(
  state: KvState,
  row: number,
): { span: number; state: Omit<KvState, 'past'> } {
  const span = realSpan(state, row);
  const length = (state.shared?.length ?? 0) + span;
  return {
    span,
    state: {
      batch: 1,
      pastLength: length,
      attentionMask: [Array.from({ length }, () => 1)],
      realTokens: [state.realTokens[row] ?? 0],
    },
  };
}

/** `count` columns of one row from column `from` on, as batch-of-one tensors. */
function copyColumns(
  layout: KvLayout,
  state: KvState,
  row: number,
  from: number,
  count: number,
): Tensor[] {
  const { kvHeads: heads, headDim: dim } = layout;
  return layout.pastNames.map((name, t) => {
    const source = cacheBits(state.past[t], name);
    const stride = capacityOf(state);
    const out = allocateCache(layout.dtype, heads * count * dim);
    for (let h = 0; h < heads; h += 1) {
      const start = ((row * heads + h) * stride + from) * dim;
      out.set(source.subarray(start, start + count * dim), h * count * dim);
    }
    return new Tensor(layout.dtype, out, [1, heads, count, dim]);
  });
}
