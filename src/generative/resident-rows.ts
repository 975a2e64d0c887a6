// kv-batch.ts's row moves for a decode cache that stays resident (runtime.kvOn: device): the same
// left-padded batches, made by the window and join graphs (src/runtime/graphs/kv-rows-graph.ts) on
// the model's device, so that rows joining or leaving do not bring the cache to the host. The new
// batch's padding columns may hold a source's padding instead of zeros; the attention mask hides
// them either way (kv-cache.ts), and greedy tokens are the host path's
// (test/parity/smollm2-resident-kv.test.ts). Rows move onto a shared prefix and off it the same
// way (moveOntoPrefix, withoutPrefix): a window of the row's columns, joined after the prefix's
// columns by the prefix cache's columns graph when the row takes it back.
import { InferenceError } from '../errors.ts';
import type { KvLayout, KvState, SharedPrefix } from '../pipelines/generation/kv-cache.ts';
import type { KvTensor } from '../pipelines/generation/kv-dtype.ts';
import { joinColumns, windowColumns } from '../pipelines/generation/prefix-blocks.ts';
import type { LoadedModel } from '../pipelines/runtime/model-store.ts';
import {
  JOIN_ORDER,
  int64Tensor,
  joinGraph,
  joinInput,
  joinOutput,
} from '../runtime/graphs/kv-rows-graph.ts';
import { runAllResident, type ResidentFeeds, type ResidentTensor } from '../runtime/session.ts';
import type { RowMoves } from './decode-groups.ts';
import { assembledRows, movedOffPrefix, movedOntoPrefix, type KvRowRef } from './kv-batch.ts';

const NEEDS = 'resident row moves';

export class ResidentRows implements RowMoves {
  private readonly model: LoadedModel;
  private readonly layout: KvLayout;

  constructor(model: LoadedModel, layout: KvLayout) {
    this.model = model;
    this.layout = layout;
  }

  /** Rows `from` of `state` (dropRows' result), made on the device. */
  async keepRows(state: KvState, from: readonly number[]): Promise<KvState> {
    const past = await this.window(state, from, 0, state.pastLength, 0);
    return {
      batch: from.length,
      ...(state.shared === undefined ? {} : { shared: state.shared }),
      past,
      pastLength: state.pastLength,
      attentionMask: from.map((r) => state.attentionMask[r] ?? []),
      realTokens: from.map((r) => state.realTokens[r] ?? 0),
    };
  }

  /** assembleRows on the device: the rows in order, each keeping its real span, left-padded. */
  async assemble(rows: readonly KvRowRef[]): Promise<KvState> {
    if (rows.length === 0) throw new InferenceError('a decode batch needs at least one row');
    const batch = assembledRows(rows);
    const length = batch.pastLength;
    // One window per source state: its rows' last `length` columns (all its rows end at its
    // pastLength), padded on the left to `length`.
    const sources = new Map<KvState, number[]>();
    for (const { state, row } of rows) {
      const list = sources.get(state);
      if (list === undefined) sources.set(state, [row]);
      else if (!list.includes(row)) list.push(row);
    }
    const windows: KvTensor[][] = [];
    const offsets = new Map<KvState, number>();
    let offset = 0;
    try {
      for (const [state, picked] of sources) {
        const columns = Math.min(length, state.pastLength);
        const start = state.pastLength - columns;
        windows.push(await this.window(state, picked, start, state.pastLength, length - columns));
        offsets.set(state, offset);
        offset += picked.length;
      }
      const order = rows.map(
        ({ state, row }) =>
          (offsets.get(state) as number) + (sources.get(state) as number[]).indexOf(row),
      );
      return { ...batch.state, past: await this.join(windows, order) };
    } finally {
      for (const window of windows) release(window);
    }
  }

  /** moveOntoPrefix on the device: the row's columns after the prefix, a batch of one on it. */
  async moveOntoPrefix(state: KvState, row: number, shared: SharedPrefix): Promise<KvState> {
    const moved = movedOntoPrefix(state, row, shared);
    const past = await this.window(state, [row], moved.skip, state.pastLength, 0);
    return { ...moved.state, past };
  }

  /** withoutPrefix on the device: the prefix's columns, then the row's real span. */
  async withoutPrefix(state: KvState, row: number): Promise<KvState> {
    const shared = state.shared;
    if (shared === undefined) return this.assemble([{ state, row }]);
    const moved = movedOffPrefix(state, row);
    const start = state.pastLength - moved.span;
    const window = await this.window(state, [row], start, state.pastLength, 0);
    try {
      // The prefix stays the prefix cache's (or the loop's): the join copies its columns.
      const past = await joinColumns(this.model, this.layout, [shared.past, window], NEEDS);
      return { ...moved.state, past };
    } finally {
      release(window);
    }
  }

  private window(
    state: KvState,
    rows: readonly number[],
    start: number,
    end: number,
    leftPad: number,
  ): Promise<KvTensor[]> {
    const columns = { start, end, leftPad };
    return windowColumns(this.model, this.layout, state.past, rows, columns, NEEDS);
  }

  private async join(
    windows: readonly KvTensor[][],
    order: readonly number[],
  ): Promise<KvTensor[]> {
    const count = this.layout.pastNames.length;
    const sources = windows.length;
    const session = await this.model.helper(
      `kv-join-${count}x${sources}-${this.layout.dtype}`,
      () => joinGraph(count, sources, this.layout.dtype),
    );
    const feeds: ResidentFeeds = { [JOIN_ORDER]: int64Tensor(order) };
    windows.forEach((window, s) => window.forEach((t, i) => (feeds[joinInput(s, i)] = t)));
    const outputs = Array.from({ length: count }, (_, i) => joinOutput(i));
    return runAllResident(session, feeds, outputs, NEEDS);
  }
}

/** Frees the values a move made on the way. */
function release(tensors: readonly KvTensor[]): void {
  for (const t of tensors) (t as ResidentTensor).release();
}
