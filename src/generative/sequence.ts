// One request inside the engine: its prompt, how far the prompt is in the cache, its own KV cache
// while it prefills (a batch of one), and its GenerationProgress (own seeded PRNG, stop sequences),
// which is why a request's tokens do not depend on what it is batched with.
import type { KvState } from '../pipelines/generation/kv-cache.ts';
import type { GenerationProgress } from '../pipelines/generation/generation-progress.ts';
import type { Schedulable } from './scheduler.ts';

export type CancelReason = 'aborted' | 'deadline';

export class Sequence implements Schedulable {
  readonly id: number;
  readonly promptIds: readonly number[];
  readonly progress: GenerationProgress;
  readonly kvReserve: number;
  /** Epoch milliseconds after which it is cancelled, wherever it is. */
  readonly deadlineAt: number | undefined;
  prefilled = 0;
  /** Its cache until it joins the decode batch; then the batch holds it. */
  kv: KvState | undefined;
  /** The token the next decode step feeds (the last one chosen). */
  lastToken = -1;
  /** Index of the next token event. */
  emitted = 0;
  cancelled: CancelReason | undefined;

  constructor(
    id: number,
    promptIds: readonly number[],
    progress: GenerationProgress,
    maxNewTokens: number,
    deadlineAt: number | undefined,
  ) {
    this.id = id;
    this.promptIds = promptIds;
    this.progress = progress;
    this.kvReserve = promptIds.length + maxNewTokens;
    this.deadlineAt = deadlineAt;
  }

  get promptLength(): number {
    return this.promptIds.length;
  }
}
