// Where the prefix cache (prefix-cache.ts) keeps its blocks' keys and values, and how it cuts them
// from a sequence's cache and joins them into a hit. On the host they are JS arrays, copied;
// when the engine keeps prefills' caches resident (runtime.kvOn; kv-cache.ts's residentCache) they
// stay resident values on the model's device, cut by the window graph and joined by the columns
// graph (src/runtime/graphs/), so that neither storing a prompt's blocks nor a hit brings a cache
// to the host: on a GPU, a hit is then no more than a copy on the device.
import {
  columnsGraph,
  columnsInput,
  columnsOutput,
} from '../../runtime/graphs/kv-columns-graph.ts';
import { windowFeeds, windowGraph, windowOutput } from '../../runtime/graphs/kv-rows-graph.ts';
import { isResident, runAllResident, type ResidentFeeds } from '../../runtime/session.ts';
import { Tensor } from '../../runtime/tensor.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import type { KvLayout } from './kv-cache.ts';
import { allocateCache, cacheBits, type KvTensor } from './kv-dtype.ts';

/** One block's columns per cache tensor (KvLayout.pastNames order), [1, kv heads, block, dim]. */
export type BlockColumns = readonly KvTensor[];

export interface PrefixBlocks {
  /**
   * One block's columns, from `column` on, of batch-of-one cache tensors [1, kv heads, capacity,
   * dim]; the cut owns its storage (the tensors are a sequence's, freed as it moves on).
   */
  cut(tensors: readonly KvTensor[], capacity: number, column: number): Promise<BlockColumns>;
  /** The blocks in order as one batch-of-one cache per tensor, [1, kv heads, columns, dim]. */
  join(blocks: readonly BlockColumns[]): Promise<KvTensor[]>;
  /** Frees what `cut` or `join` made (an evicted block, a dropped shared prefix). */
  release(tensors: readonly KvTensor[]): void;
}

/** Blocks in JS memory: copies, which the garbage collector frees. */
export class HostPrefixBlocks implements PrefixBlocks {
  private readonly layout: KvLayout;
  private readonly blockTokens: number;

  constructor(layout: KvLayout, blockTokens: number) {
    this.layout = layout;
    this.blockTokens = blockTokens;
  }

  cut(tensors: readonly KvTensor[], capacity: number, column: number): Promise<BlockColumns> {
    const { kvHeads: heads, headDim: dim, dtype } = this.layout;
    const { blockTokens } = this;
    const block = this.layout.pastNames.map((name, t) => {
      const source = cacheBits(tensors[t], name);
      const out = allocateCache(dtype, heads * blockTokens * dim);
      for (let h = 0; h < heads; h += 1) {
        const from = (h * capacity + column) * dim;
        out.set(source.subarray(from, from + blockTokens * dim), h * blockTokens * dim);
      }
      return new Tensor(dtype, out, [1, heads, blockTokens, dim]);
    });
    return Promise.resolve(block);
  }

  join(blocks: readonly BlockColumns[]): Promise<KvTensor[]> {
    const { kvHeads: heads, headDim: dim, dtype } = this.layout;
    const { blockTokens } = this;
    const length = blocks.length * blockTokens;
    const past = this.layout.pastNames.map((name, t) => {
      const out = allocateCache(dtype, heads * length * dim);
      blocks.forEach((block, b) => {
        const data = cacheBits(block[t], name);
        for (let h = 0; h < heads; h += 1) {
          const from = h * blockTokens * dim;
          out.set(
            data.subarray(from, from + blockTokens * dim),
            (h * length + b * blockTokens) * dim,
          );
        }
      });
      return new Tensor(dtype, out, [1, heads, length, dim]);
    });
    return Promise.resolve(past);
  }

  /** Nothing to free: the garbage collector takes host copies. */
  release(): void {}
}

const NEEDS = 'resident prefix-cache blocks';

/** Blocks as resident values on the model's device, moved by helper graphs beside the model. */
export class ResidentPrefixBlocks implements PrefixBlocks {
  private readonly model: LoadedModel;
  private readonly layout: KvLayout;
  private readonly blockTokens: number;

  constructor(model: LoadedModel, layout: KvLayout, blockTokens: number) {
    this.model = model;
    this.layout = layout;
    this.blockTokens = blockTokens;
  }

  async cut(
    tensors: readonly KvTensor[],
    _capacity: number,
    column: number,
  ): Promise<BlockColumns> {
    // The window of the decode batch's row moves, on row 0 and the block's columns.
    const columns = { start: column, end: column + this.blockTokens, leftPad: 0 };
    return windowColumns(this.model, this.layout, tensors, [0], columns, NEEDS);
  }

  join(blocks: readonly BlockColumns[]): Promise<KvTensor[]> {
    return joinColumns(this.model, this.layout, blocks, NEEDS);
  }

  release(tensors: readonly KvTensor[]): void {
    for (const t of tensors) if (isResident(t)) t.release();
  }
}

/**
 * Rows `rows` of cache tensors, columns [start, end), `leftPad` zero columns added on the left, by
 * the window graph on the model's device (kv-rows-graph.ts). `needs` names what asked, for errors.
 */
export async function windowColumns(
  model: LoadedModel,
  layout: KvLayout,
  tensors: readonly KvTensor[],
  rows: readonly number[],
  { start, end, leftPad }: { start: number; end: number; leftPad: number },
  needs: string,
): Promise<KvTensor[]> {
  const { length: count } = layout.pastNames;
  const session = await model.helper(`kv-window-${count}-${layout.dtype}`, () =>
    windowGraph(count, layout.dtype),
  );
  const outputs = Array.from({ length: count }, (_, i) => windowOutput(i));
  return runAllResident(session, windowFeeds(tensors, rows, start, end, leftPad), outputs, needs);
}

/**
 * Batch-of-one caches (one tensor per cache tensor of the layout each) side by side on the column
 * axis, in order, by the columns graph on the model's device: a hit's blocks, or a shared prefix
 * and a row's own columns (ResidentRows.withoutPrefix). `needs` names what asked, for errors.
 */
export async function joinColumns(
  model: LoadedModel,
  layout: KvLayout,
  parts: readonly (readonly KvTensor[])[],
  needs: string,
): Promise<KvTensor[]> {
  const { length: count } = layout.pastNames;
  // One graph per number of parts, as the join graph has one per number of sources.
  const session = await model.helper(`kv-columns-${count}x${parts.length}-${layout.dtype}`, () =>
    columnsGraph(count, parts.length, layout.dtype),
  );
  const feeds: ResidentFeeds = {};
  parts.forEach((part, p) => part.forEach((t, i) => (feeds[columnsInput(p, i)] = t)));
  const outputs = Array.from({ length: count }, (_, i) => columnsOutput(i));
  return runAllResident(session, feeds, outputs, needs);
}
