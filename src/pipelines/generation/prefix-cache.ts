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
// one. Blocks live where a PrefixBlocks keeps them (prefix-blocks.ts): copied to the host, or,
// when the engine keeps caches resident, as values on the model's device that this cache owns and
// releases (when it evicts them, and all of them on `close`).
// On an export with a shared-prefix input (kv-cache.ts), a hit is that input: the cached blocks as
// one batch-of-one prefix, made once per cached path and handed to every prompt that reaches the
// same block, so their rows can decode together while the prefix is held (and read) once.
// Otherwise a hit is a batch-of-one past holding the blocks' columns.
import { z } from 'zod';
import { parseWithSchema } from '../../options/parse.ts';
import {
  capacityOf,
  emptyKvState,
  realSpan,
  type KvLayout,
  type KvState,
  type SharedPrefix,
} from './kv-cache.ts';
import { HostPrefixBlocks, type BlockColumns, type PrefixBlocks } from './prefix-blocks.ts';

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
    /**
     * On an export with prefix_key_values inputs, hits are fed through them (held once per decode
     * batch); false copies them into every row's past instead, as on other exports. Default true.
     */
    sharedInput: z.boolean().default(true),
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
  /** This block's columns, held by `PrefixCache.store` (PrefixBlocks). */
  data: BlockColumns;
  lastUsed: number;
  /** The path from the root to this block as one shared prefix, once a hit has ended here. */
  shared?: SharedPrefix;
}

export class PrefixCache {
  readonly limits: PrefixCacheLimits;
  private readonly layout: KvLayout;
  private readonly roots = new Map<string, Block>();
  private readonly blocks = new Set<Block>();
  private readonly blockBytes: number;
  /** Hits go to the export's shared-prefix inputs instead of each row's past. */
  private readonly sharedInput: boolean;
  private readonly storage: PrefixBlocks;
  /** The shared prefixes kept on blocks: the cache's own, released with their blocks on close. */
  private readonly prefixes = new Set<SharedPrefix>();
  /**
   * The tail of the cache's operations: each waits for the one before, so that no block is
   * evicted, and released, while a resident cut or join that reads it is still running.
   */
  private queue: Promise<unknown> = Promise.resolve();
  private bytes = 0;
  private clock = 0;
  private counts = { lookups: 0, hits: 0, tokensSaved: 0, evictions: 0 };

  constructor(
    layout: KvLayout,
    limits: PrefixCacheLimits,
    storage: PrefixBlocks = new HostPrefixBlocks(layout, limits.blockTokens),
  ) {
    this.layout = layout;
    this.limits = limits;
    this.storage = storage;
    this.sharedInput = limits.sharedInput && layout.prefixNames.length > 0;
    const elements = layout.kvHeads * limits.blockTokens * layout.headDim;
    this.blockBytes = layout.pastNames.length * elements * (layout.dtype === 'float32' ? 4 : 2);
  }

  stats(): PrefixCacheStats {
    return { ...this.counts, bytes: this.bytes, blocks: this.blocks.size };
  }

  /**
   * The longest cached prefix of the prompt, in whole blocks, leaving at least its last token to
   * run (its logits give the first generated token); undefined when no block matches. The hit's
   * own columns (`state.past`) are the caller's: resident ones are released with the state
   * (kv-cache.ts's releaseResident); its shared prefix stays the cache's.
   */
  lookup(promptIds: readonly number[]): Promise<PrefixHit | undefined> {
    return this.exclusive(() => this.find(promptIds));
  }

  private async find(promptIds: readonly number[]): Promise<PrefixHit | undefined> {
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
    if (!this.sharedInput) return { state: await this.assemble(path), tokens };
    // The shallowest prefix already handed out along the path is shared; the blocks past it go
    // into the row's own past. Prompts built on one template diverge from each other at
    // different depths (records that begin alike), and a prefix per depth would split their rows
    // into separate decode runs; the shallowest one settles on where the template ends.
    let cut = path.findIndex((block) => block.shared !== undefined);
    if (cut < 0) {
      // A path that stops where the trie stops may still be growing (the prompt that fills it is
      // mid-prefill): its end is not yet known to be where prompts part, so it is copied into the
      // row, and the row is moved onto a shared prefix when it joins the decode batch (sharedFor).
      if ((path[path.length - 1] as Block).children.size === 0)
        return { state: await this.assemble(path), tokens };
      cut = path.length - 1;
    }
    const rest = path.slice(cut + 1);
    const own = rest.length > 0 ? await this.assemble(rest) : emptyKvState(this.layout, 1);
    return {
      state: { ...own, realTokens: [tokens], shared: await this.sharedOf(path.slice(0, cut + 1)) },
      tokens,
    };
  }

  /**
   * The shared prefix already handed out for the first blocks of the prompt of row `row` of a
   * cache without one (a prefilled sequence's, or a decode batch's, left-padded); undefined when
   * there is none. The row can be moved onto it (`moveOntoPrefix` in kv-batch.ts): the prompt
   * that prefilled a template itself, and prompts that copied a hit while the template was still
   * being stored, can then decode in one run with the prompts that shared it.
   */
  sharedFor(promptIds: readonly number[], state: KvState, row: number): SharedPrefix | undefined {
    if (!this.sharedInput || state.shared !== undefined) return undefined;
    const span = realSpan(state, row);
    // Padding inside the row's span would shift its columns off their positions.
    if (state.realTokens[row] !== span || promptIds.length < this.limits.minTokens)
      return undefined;
    const whole = Math.floor(Math.min(span, promptIds.length) / this.limits.blockTokens);
    let level = this.roots;
    for (let i = 0; i < whole; i += 1) {
      const block = level.get(this.keyOf(promptIds, i));
      if (block === undefined) return undefined;
      if (block.shared !== undefined) return block.shared;
      level = block.children;
    }
    return undefined;
  }

  /** The path's blocks as one shared prefix, kept on its last block (within maxBytes) for reuse. */
  private async sharedOf(path: readonly Block[]): Promise<SharedPrefix> {
    const end = path[path.length - 1] as Block;
    if (end.shared !== undefined) return end.shared;
    const assembled = await this.assemble(path);
    const shared = { past: assembled.past, length: assembled.pastLength };
    const bytes = path.length * this.blockBytes;
    if (this.makeRoom(end, bytes)) {
      end.shared = shared;
      this.prefixes.add(shared);
      this.bytes += bytes;
    }
    return shared;
  }

  /**
   * Caches the whole blocks of a prompt's cache that are not cached yet. `state` is a batch of
   * one without padding whose columns are the prompt's first `state.pastLength` tokens (a
   * sequence's cache after a prefill chunk); called after every chunk, so a long prompt is
   * shareable before its prefill ends. The blocks are cut from it before this resolves: the state
   * may be released after that.
   */
  store(promptIds: readonly number[], state: KvState): Promise<void> {
    return this.exclusive(() => this.add(promptIds, state));
  }

  private async add(promptIds: readonly number[], state: KvState): Promise<void> {
    if (promptIds.length < this.limits.minTokens || this.limits.maxBytes === 0) return;
    const offset = state.shared?.length ?? 0;
    // A padded or batched cache has columns that are not this prompt's positions.
    if (state.batch !== 1 || state.realTokens[0] !== offset + state.pastLength) return;
    const { blockTokens } = this.limits;
    if (offset % blockTokens !== 0) return;
    const whole = Math.floor(Math.min(offset + state.pastLength, promptIds.length) / blockTokens);
    const tick = ++this.clock;
    let parent: Block | undefined;
    let level = this.roots;
    for (let i = 0; i < whole; i += 1) {
      const key = this.keyOf(promptIds, i);
      let block = level.get(key);
      if (block === undefined) {
        if (!this.makeRoom(parent, this.blockBytes)) return;
        const column = i * blockTokens;
        block = {
          parent,
          key,
          children: new Map(),
          data:
            column < offset
              ? await this.storage.cut(state.shared?.past ?? [], offset, column)
              : await this.storage.cut(state.past, capacityOf(state), column - offset),
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

  /**
   * Whether `shared` is still one of the cache's prefixes. One it never kept (no room) or has
   * evicted belongs to the rows that decode on it: resident, their loop frees it once none does
   * (GenerationLoop), and a forgotten one goes with the garbage collector.
   */
  holds(shared: SharedPrefix): boolean {
    return this.prefixes.has(shared);
  }

  /**
   * Empties the cache, releasing every value it holds (its resident blocks and prefixes): the
   * engine's loop calls it when it closes, once no row decodes on a shared prefix any more.
   */
  close(): Promise<void> {
    return this.exclusive(() => {
      for (const block of this.blocks) this.storage.release(block.data);
      for (const shared of this.prefixes) this.storage.release(shared.past);
      this.prefixes.clear();
      this.blocks.clear();
      this.roots.clear();
      this.bytes = 0;
      return Promise.resolve();
    });
  }

  /** Runs `task` after every operation before it has finished. */
  private exclusive<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private keyOf(ids: readonly number[], block: number): string {
    const { blockTokens } = this.limits;
    return ids.slice(block * blockTokens, (block + 1) * blockTokens).join(',');
  }

  private touch(path: readonly Block[]): void {
    const tick = ++this.clock;
    for (const block of path) block.lastUsed = tick;
  }

  /**
   * Evicts least recently used leaves other than `keep` (the block being extended or given a
   * prefix) until `bytes` more fit. A block's assembled prefix goes with it, never before it:
   * decoding rows hold that prefix anyway, and a prompt that reached it after it was dropped
   * would get a copy of its own and decode in a run apart from the others.
   */
  private makeRoom(keep: Block | undefined, bytes: number): boolean {
    while (this.bytes + bytes > this.limits.maxBytes) {
      let victim: Block | undefined;
      for (const block of this.blocks) {
        if (block.children.size > 0 || block === keep) continue;
        if (victim === undefined || block.lastUsed < victim.lastUsed) victim = block;
      }
      if (victim === undefined) return false;
      this.dropShared(victim);
      (victim.parent?.children ?? this.roots).delete(victim.key);
      this.blocks.delete(victim);
      // No state holds a block's own columns: hits and prefixes are joined copies of them.
      this.storage.release(victim.data);
      this.bytes -= this.blockBytes;
      this.counts.evictions += 1;
    }
    return true;
  }

  private dropShared(block: Block): void {
    if (block.shared === undefined) return;
    this.bytes -= (block.shared.length / this.limits.blockTokens) * this.blockBytes;
    // Not released: rows may still decode on it, and it is theirs from now on (holds).
    this.prefixes.delete(block.shared);
    delete block.shared;
  }

  /** The blocks of a path as one batch-of-one cache, [1, kv heads, path length, head dim]. */
  private async assemble(path: readonly Block[]): Promise<KvState> {
    const length = path.length * this.limits.blockTokens;
    return {
      batch: 1,
      past: await this.storage.join(path.map((block) => block.data)),
      pastLength: length,
      attentionMask: [Array.from({ length }, () => 1)],
      realTokens: [length],
    };
  }
}
