// The keys and values of prompt prefixes, kept so that requests whose prompts start alike (an
// enrichment route's instruction template before each record) prefill only what differs. A
// position's keys and values depend only on the tokens up to it (causal attention, positions
// counted from 0), so the cache of a prompt's first n tokens is valid for every prompt that starts
// with the same n tokens. Prompts are cut into blocks of `blockTokens` ids; a trie of blocks,
// each keyed by its own ids under its parent, stores every block's cache columns once, so "the
// same instruction + another record" walks the instruction's blocks and starts from them, with no
// template to declare. Memory is bounded by `maxBytes`: the least recently used block without
// descendants goes first, so a shared template outlives the records cached under it, and no block
// is ever cut off from the root. The single-request pipeline and every generation thread each own
// one; nothing here touches the model.
import { Tensor } from 'onnxruntime-node';
import { z } from 'zod';
import { parseWithSchema } from '../../options/parse.ts';
import type { KvLayout, KvState } from './kv-cache.ts';
import { allocateCache, cacheBits, type CacheArray } from './kv-dtype.ts';

export const prefixCacheSchema = z
  .object({
    /**
     * Bytes of cached keys/values per generation thread (per pipeline on the single-request
     * path); 0 turns the cache off. Default 128 MiB (~5,700 tokens of SmolLM2-135M, 46 KiB each).
     */
    maxBytes: z
      .number()
      .int()
      .min(0)
      .default(128 * 1024 * 1024),
    /** Prompt tokens per cached block: a prefix is shared in whole blocks. Default 16. */
    blockTokens: z.number().int().min(1).max(4096).default(16),
    /** Prompts shorter than this neither use nor fill the cache. Default 32. */
    minTokens: z.number().int().min(1).default(32),
  })
  .strict();

export type PrefixCacheOptions = z.input<typeof prefixCacheSchema>;
export type PrefixCacheLimits = z.output<typeof prefixCacheSchema>;

export function compilePrefixCacheOptions(value: unknown, path = 'prefixCache'): PrefixCacheLimits {
  return parseWithSchema(prefixCacheSchema, value ?? {}, path);
}

/** Cumulative counts since the cache was made (metrics); `bytes` and `blocks` are current. */
export interface PrefixCacheStats {
  /** Prompts long enough to use the cache that looked it up. */
  lookups: number;
  /** Lookups that found at least one block. */
  hits: number;
  /** Prompt tokens that hits took from the cache instead of prefilling. */
  tokensSaved: number;
  /** Blocks dropped to stay under maxBytes. */
  evictions: number;
  bytes: number;
  blocks: number;
}

export const NO_PREFIX_CACHE_STATS: PrefixCacheStats = Object.freeze({
  lookups: 0,
  hits: 0,
  tokensSaved: 0,
  evictions: 0,
  bytes: 0,
  blocks: 0,
});

export interface PrefixHit {
  /** A batch-of-one cache holding the prompt's first `tokens` tokens. */
  state: KvState;
  tokens: number;
}

interface Block {
  parent: Block | undefined;
  key: string;
  children: Map<string, Block>;
  /** Per cache tensor (KvLayout.pastNames order), this block's columns as [kv heads, block, dim]. */
  data: CacheArray[];
  lastUsed: number;
}

export class PrefixCache {
  readonly limits: PrefixCacheLimits;
  private readonly layout: KvLayout;
  private readonly roots = new Map<string, Block>();
  private readonly blocks = new Set<Block>();
  private readonly blockBytes: number;
  private bytes = 0;
  private clock = 0;
  private counts = { lookups: 0, hits: 0, tokensSaved: 0, evictions: 0 };

  constructor(layout: KvLayout, limits: PrefixCacheLimits) {
    this.layout = layout;
    this.limits = limits;
    const elements = layout.kvHeads * limits.blockTokens * layout.headDim;
    this.blockBytes = layout.pastNames.length * elements * (layout.dtype === 'float32' ? 4 : 2);
  }

  stats(): PrefixCacheStats {
    return { ...this.counts, bytes: this.bytes, blocks: this.blocks.size };
  }

  /**
   * The longest cached prefix of the prompt, in whole blocks, leaving at least its last token to
   * run (its logits give the first generated token); undefined when no block matches.
   */
  lookup(promptIds: readonly number[]): PrefixHit | undefined {
    if (promptIds.length < this.limits.minTokens || this.limits.maxBytes === 0) return undefined;
    this.counts.lookups += 1;
    const usable = Math.floor((promptIds.length - 1) / this.limits.blockTokens);
    const path: Block[] = [];
    let level = this.roots;
    for (let i = 0; i < usable; i += 1) {
      const block = level.get(this.keyOf(promptIds, i));
      if (block === undefined) break;
      path.push(block);
      level = block.children;
    }
    if (path.length === 0) return undefined;
    this.touch(path);
    const tokens = path.length * this.limits.blockTokens;
    this.counts.hits += 1;
    this.counts.tokensSaved += tokens;
    return { state: this.assemble(path), tokens };
  }

  /**
   * Caches the whole blocks of a prompt's cache that are not cached yet. `state` is a batch of
   * one without padding whose columns are the prompt's first `state.pastLength` tokens (a
   * sequence's cache after a prefill chunk); called after every chunk, so a long prompt is
   * shareable before its prefill ends.
   */
  store(promptIds: readonly number[], state: KvState): void {
    if (promptIds.length < this.limits.minTokens || this.limits.maxBytes === 0) return;
    // A padded or batched cache has columns that are not this prompt's positions.
    if (state.batch !== 1 || state.realTokens[0] !== state.pastLength) return;
    const { blockTokens } = this.limits;
    const whole = Math.floor(Math.min(state.pastLength, promptIds.length) / blockTokens);
    const tick = ++this.clock;
    let parent: Block | undefined;
    let level = this.roots;
    for (let i = 0; i < whole; i += 1) {
      const key = this.keyOf(promptIds, i);
      let block = level.get(key);
      if (block === undefined) {
        if (!this.makeRoom(parent)) return;
        block = {
          parent,
          key,
          children: new Map(),
          data: this.slice(state, i),
          lastUsed: tick,
        };
        level.set(key, block);
        this.blocks.add(block);
        this.bytes += this.blockBytes;
      }
      block.lastUsed = tick;
      parent = block;
      level = block.children;
    }
  }

  private keyOf(ids: readonly number[], block: number): string {
    const { blockTokens } = this.limits;
    return ids.slice(block * blockTokens, (block + 1) * blockTokens).join(',');
  }

  private touch(path: readonly Block[]): void {
    const tick = ++this.clock;
    for (const block of path) block.lastUsed = tick;
  }

  /** Evicts least recently used leaves until one more block fits; `keep` is the block to extend. */
  private makeRoom(keep: Block | undefined): boolean {
    while (this.bytes + this.blockBytes > this.limits.maxBytes) {
      let victim: Block | undefined;
      for (const block of this.blocks) {
        if (block.children.size > 0 || block === keep) continue;
        if (victim === undefined || block.lastUsed < victim.lastUsed) victim = block;
      }
      if (victim === undefined) return false;
      (victim.parent?.children ?? this.roots).delete(victim.key);
      this.blocks.delete(victim);
      this.bytes -= this.blockBytes;
      this.counts.evictions += 1;
    }
    return true;
  }

  /** Block `index`'s columns of every cache tensor of a batch-of-one state, copied. */
  private slice(state: KvState, index: number): CacheArray[] {
    const { kvHeads: heads, headDim: dim, dtype } = this.layout;
    const { blockTokens } = this.limits;
    return this.layout.pastNames.map((name, t) => {
      const source = cacheBits(state.past[t], name);
      const out = allocateCache(dtype, heads * blockTokens * dim);
      for (let h = 0; h < heads; h += 1) {
        const from = (h * state.pastLength + index * blockTokens) * dim;
        out.set(source.subarray(from, from + blockTokens * dim), h * blockTokens * dim);
      }
      return out;
    });
  }

  /** The blocks of a path as one batch-of-one cache, [1, kv heads, path length, head dim]. */
  private assemble(path: readonly Block[]): KvState {
    const { kvHeads: heads, headDim: dim, dtype } = this.layout;
    const { blockTokens } = this.limits;
    const length = path.length * blockTokens;
    const past = this.layout.pastNames.map((_, t) => {
      const out = allocateCache(dtype, heads * length * dim);
      path.forEach((block, b) => {
        const data = block.data[t] as CacheArray;
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
    return {
      batch: 1,
      past,
      pastLength: length,
      attentionMask: [Array.from({ length }, () => 1)],
      realTokens: [length],
    };
  }
}
