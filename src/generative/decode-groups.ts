// The decode batch as a few left-padded groups instead of one. A decode step's cost on this
// export grows with rows x padded past length (the graph concatenates and copies the whole cache
// every step), so one long row would make every short row pay for its length. Measured on the
// ~100M model (docs/generative.md), one more session.run costs about as much as ~1000 cached
// token-rows; rows sorted by cached length are cut into the groups that minimise
// sum(runCost + rows x longest span), an exact dynamic programme over at most maxActive rows.
// Rows that start from different shared prefixes (kv-cache.ts) cannot share a run: each prefix's
// rows are cut on their own, their spans counting only their own columns.
import type { KvLayout, KvState, SharedPrefix } from '../pipelines/generation/kv-cache.ts';
import { assembleRows, realSpan, type KvRowRef } from './kv-batch.ts';

export interface DecodeGroup<S> {
  /** `rows[r]` owns row r of `state`. */
  rows: S[];
  state: KvState;
}

export interface GroupMember<S> {
  seq: S;
  ref: KvRowRef;
}

export function formGroups<S>(
  layout: KvLayout,
  members: readonly GroupMember<S>[],
  runCostTokens: number,
): DecodeGroup<S>[] {
  const byPrefix = new Map<SharedPrefix | undefined, GroupMember<S>[]>();
  for (const m of members) {
    const list = byPrefix.get(m.ref.state.shared);
    if (list === undefined) byPrefix.set(m.ref.state.shared, [m]);
    else list.push(m);
  }
  return [...byPrefix.values()].flatMap((part) => cutGroups(layout, part, runCostTokens));
}

function cutGroups<S>(
  layout: KvLayout,
  members: readonly GroupMember<S>[],
  runCostTokens: number,
): DecodeGroup<S>[] {
  const sorted = members
    .map((m) => ({ ...m, span: realSpan(m.ref.state, m.ref.row) }))
    .sort((a, b) => a.span - b.span);
  return cutPoints(
    sorted.map((m) => m.span),
    runCostTokens,
  ).map(([from, to]) => {
    const part = sorted.slice(from, to);
    return {
      rows: part.map((m) => m.seq),
      state: assembleRows(
        layout,
        part.map((m) => m.ref),
      ),
    };
  });
}

/** [from, to) ranges over ascending spans minimising sum(runCost + size x largest span). */
export function cutPoints(spans: readonly number[], runCostTokens: number): [number, number][] {
  const n = spans.length;
  const best = new Float64Array(n + 1);
  const start = new Int32Array(n + 1);
  for (let to = 1; to <= n; to += 1) {
    best[to] = Infinity;
    const widest = spans[to - 1] as number;
    for (let from = 0; from < to; from += 1) {
      const cost = (best[from] as number) + runCostTokens + (to - from) * widest;
      if (cost < (best[to] as number)) {
        best[to] = cost;
        start[to] = from;
      }
    }
  }
  const ranges: [number, number][] = [];
  for (let to = n; to > 0; to = start[to] as number) ranges.unshift([start[to] as number, to]);
  return ranges;
}
