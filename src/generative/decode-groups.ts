// The decode batch as a few left-padded groups instead of one. A decode step's cost grows with
// rows x padded past length (most on an export that concatenates and copies the whole cache every
// step), so one long row would make every short row pay for its length. Measured on the
// ~100M model (docs/generative.md), one more session.run costs about as much as ~1000 cached
// token-rows; rows sorted by cached length are cut into the groups that minimise
// sum(runCost + rows x longest span), an exact dynamic programme over at most maxActive rows.
// Rows that start from different shared prefixes (kv-cache.ts) cannot share a run: each prefix's
// rows are cut on their own, their spans counting only their own columns. A prefix is worth its
// own runs only when the copies it saves outweigh a run: k rows on a prefix of P tokens carry
// (k - 1) x P fewer token-rows than the same rows with the prefix spliced into each, so a prefix
// keeps its rows apart when that exceeds runCostTokens (or when every row shares it); otherwise
// its rows take the prefix back into their own columns and join the rest.
// Rows are moved (assembled, onto and off a prefix) by the caller's RowMoves: kv-batch.ts's host
// copies, or ResidentRows' graphs on the device where the decode cache stays resident.
import {
  realSpan,
  releaseResident,
  type KvLayout,
  type KvState,
  type SharedPrefix,
} from '../pipelines/generation/kv-cache.ts';
import { assembleRows, moveOntoPrefix, withoutPrefix, type KvRowRef } from './kv-batch.ts';

/**
 * decodeRunCostTokens when the configuration leaves it out. An export that returns the whole
 * cache copies every padded column of every row each step (1024: measured on the ~100M model,
 * docs/generative.md); an appending one only attends over them, so a padded column costs a
 * fraction as much and one batch stays worth it far longer (4096: `npm run bench:decode-step`
 * measured 4,203 on SmolLM2, bench/results/cpu-2026-12-03).
 */
export function defaultDecodeRunCost(layout: KvLayout): number {
  return layout.appending ? 4096 : 1024;
}

export interface DecodeGroup<S> {
  /** `rows[r]` owns row r of `state`. */
  rows: S[];
  state: KvState;
}

export interface GroupMember<S> {
  seq: S;
  ref: KvRowRef;
  /** A shared prefix of this row's positions that a row without one could be moved onto. */
  candidate?: SharedPrefix;
}

/** A group before its cache is assembled: its rows and where each row's cache is now. */
interface GroupPlan<S> {
  rows: S[];
  refs: KvRowRef[];
}

/**
 * kv-batch.ts's row moves, where the cache lives: on the host (`hostRowMoves`), or on the
 * device of a resident cache (ResidentRows). Each returns a new state that owns its tensors.
 */
export interface RowMoves {
  assemble(rows: readonly KvRowRef[]): KvState | Promise<KvState>;
  moveOntoPrefix(state: KvState, row: number, shared: SharedPrefix): KvState | Promise<KvState>;
  withoutPrefix(state: KvState, row: number): KvState | Promise<KvState>;
}

export function hostRowMoves(layout: KvLayout): RowMoves {
  return {
    assemble: (rows) => assembleRows(layout, rows),
    moveOntoPrefix: (state, row, shared) => moveOntoPrefix(layout, state, row, shared),
    withoutPrefix: (state, row) => withoutPrefix(layout, state, row),
  };
}

/**
 * The groups, their caches assembled by `moves`. A row moved onto or off a shared prefix on the
 * way is a state of its own, copied into its group's cache: it is freed here (resident), while
 * the members' states stay the caller's to free.
 */
export async function formGroups<S>(
  members: readonly GroupMember<S>[],
  runCostTokens: number,
  moves: RowMoves,
): Promise<DecodeGroup<S>[]> {
  const moved: KvState[] = [];
  const groups: DecodeGroup<S>[] = [];
  try {
    for (const { rows, refs } of await planGroups(members, runCostTokens, moves, moved))
      groups.push({ rows, state: await moves.assemble(refs) });
    return groups;
  } catch (err) {
    // The groups made before a move or an assembly failed are no one's.
    releaseResident(groups.map((group) => group.state));
    throw err;
  } finally {
    releaseResident(
      moved,
      groups.map((group) => group.state),
    );
  }
}

/** The groups' rows and caches; the states of rows it moved go into `moved`. */
async function planGroups<S>(
  members: readonly GroupMember<S>[],
  runCostTokens: number,
  moves: RowMoves,
  moved: KvState[],
): Promise<GroupPlan<S>[]> {
  const prefixOf = (m: GroupMember<S>): SharedPrefix | undefined =>
    m.ref.state.shared ?? m.candidate;
  const counts = new Map<SharedPrefix | undefined, number>();
  for (const m of members) counts.set(prefixOf(m), (counts.get(prefixOf(m)) ?? 0) + 1);
  const kept = (prefix: SharedPrefix | undefined): boolean =>
    prefix !== undefined &&
    (counts.size === 1 || ((counts.get(prefix) ?? 0) - 1) * prefix.length > runCostTokens);
  const byPrefix = new Map<SharedPrefix | undefined, GroupMember<S>[]>();
  for (const m of members) {
    const prefix = prefixOf(m);
    const key = kept(prefix) ? prefix : undefined;
    const { state, row } = m.ref;
    let ref = m.ref;
    if (key !== undefined && state.shared === undefined)
      ref = { state: await moves.moveOntoPrefix(state, row, key), row: 0 };
    else if (key === undefined && state.shared !== undefined)
      ref = { state: await moves.withoutPrefix(state, row), row: 0 };
    if (ref !== m.ref) moved.push(ref.state);
    const list = byPrefix.get(key);
    if (list === undefined) byPrefix.set(key, [{ seq: m.seq, ref }]);
    else list.push({ seq: m.seq, ref });
  }
  return [...byPrefix.values()].flatMap((part) => cutGroups(part, runCostTokens));
}

function cutGroups<S>(members: readonly GroupMember<S>[], runCostTokens: number): GroupPlan<S>[] {
  const sorted = members
    .map((m) => ({ ...m, span: realSpan(m.ref.state, m.ref.row) }))
    .sort((a, b) => a.span - b.span);
  return cutPoints(
    sorted.map((m) => m.span),
    runCostTokens,
  ).map(([from, to]) => {
    const part = sorted.slice(from, to);
    return { rows: part.map((m) => m.seq), refs: part.map((m) => m.ref) };
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
