// kv-batch.ts's row moves for a decode cache that stays resident (runtime.kvOn: device): the same
// left-padded batches, made by the window and join graphs (src/runtime/graphs/kv-rows-graph.ts) on
// the model's device, so that rows joining or leaving do not bring the cache to the host. The new
// batch's padding columns may hold a source's padding instead of zeros; the attention mask hides
// them either way (kv-cache.ts), and greedy tokens are the host path's
// (test/parity/smollm2-resident-kv.test.ts).
import { InferenceError } from '../errors.ts';
import type { KvLayout, KvState } from '../pipelines/generation/kv-cache.ts';
import { realSpan } from '../pipelines/generation/kv-cache.ts';
import type { KvTensor } from '../pipelines/generation/kv-dtype.ts';
import type { LoadedModel } from '../pipelines/runtime/model-store.ts';
import {
  JOIN_ORDER,
  WINDOW_INPUTS,
  joinGraph,
  joinInput,
  joinOutput,
  windowGraph,
  windowInput,
  windowOutput,
} from '../runtime/graphs/kv-rows-graph.ts';
import type { OrtSession, ResidentFeeds, ResidentTensor } from '../runtime/session.ts';
import { Tensor } from '../runtime/tensor.ts';
import type { KvRowRef } from './kv-batch.ts';

const int64 = (values: readonly number[]): Tensor =>
  new Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);

export class ResidentRows {
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
    const shared = rows[0]?.state.shared;
    if (rows.length === 0 || rows.some(({ state }) => state.shared !== shared))
      throw new InferenceError('rows of one decode batch must share one shared prefix');
    const spans = rows.map(({ state, row }) => realSpan(state, row));
    const length = spans.reduce((max, s) => Math.max(max, s), 0);
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
      const past = await this.join(windows, order);
      return {
        batch: rows.length,
        ...(shared === undefined ? {} : { shared }),
        past,
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
      };
    } finally {
      for (const window of windows) for (const t of window) (t as ResidentTensor).release();
    }
  }

  private async window(
    state: KvState,
    rows: readonly number[],
    start: number,
    end: number,
    leftPad: number,
  ): Promise<KvTensor[]> {
    const count = this.layout.pastNames.length;
    const session = await this.helper(`kv-window-${count}-${this.layout.dtype}`, () =>
      windowGraph(count, this.layout.dtype),
    );
    const feeds: ResidentFeeds = {
      [WINDOW_INPUTS.rows]: int64(rows),
      [WINDOW_INPUTS.start]: int64([start]),
      [WINDOW_INPUTS.end]: int64([end]),
      // ONNX Pad's pads: every axis' begin, then every axis' end; only columns get any.
      [WINDOW_INPUTS.pads]: int64([0, 0, leftPad, 0, 0, 0, 0, 0]),
    };
    state.past.forEach((t, i) => (feeds[windowInput(i)] = t));
    const outputs = Array.from({ length: count }, (_, i) => windowOutput(i));
    return this.runResident(session, feeds, outputs);
  }

  private async join(
    windows: readonly KvTensor[][],
    order: readonly number[],
  ): Promise<KvTensor[]> {
    const count = this.layout.pastNames.length;
    const sources = windows.length;
    const session = await this.helper(`kv-join-${count}x${sources}-${this.layout.dtype}`, () =>
      joinGraph(count, sources, this.layout.dtype),
    );
    const feeds: ResidentFeeds = { [JOIN_ORDER]: int64(order) };
    windows.forEach((window, s) => window.forEach((t, i) => (feeds[joinInput(s, i)] = t)));
    const outputs = Array.from({ length: count }, (_, i) => joinOutput(i));
    return this.runResident(session, feeds, outputs);
  }

  private helper(name: string, bytes: () => Uint8Array): Promise<OrtSession> {
    return this.model.helper(name, bytes);
  }

  private async runResident(
    session: OrtSession,
    feeds: ResidentFeeds,
    outputs: readonly string[],
  ): Promise<KvTensor[]> {
    if (session.runResident === undefined)
      throw new InferenceError('resident row moves need a binding with resident runs (native)');
    const out = await session.runResident({ feeds, hostOutputs: [], residentOutputs: outputs });
    return outputs.map((name) => out.resident[name] as ResidentTensor);
  }
}
