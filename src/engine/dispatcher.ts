// Moves batches from the pipelines' queues to the shards. A shard takes a batch whenever it has
// room (each thread holds a running batch and the next one); queues are visited round-robin so
// one busy pipeline cannot hold the others back; a timer wakes the loop when the oldest waiting
// item's maxWaitMs runs out.
import { CancelledError, DeadlineExceededError, InputError } from '../errors.ts';
import type { BatchQueue, QueueItem } from '../batching/batch-queue.ts';
import type { Shard } from '../shards/shard.ts';
import type { CarriedEncoding } from '../pipelines/runtime/carried-encoding.ts';

export interface Pending {
  input: unknown;
  /** Its encoding, made while it was priced, for the thread to run (carried-encoding.ts). */
  carried?: CarriedEncoding;
  resolve: (output: unknown) => void;
  reject: (error: unknown) => void;
  /** Opaque to the engine: the record's span context, handed back in BatchDone (tracing). */
  trace?: unknown;
}

export interface DispatchStats {
  batches: number;
  items: number;
  /** Sum of the items' own token lengths times their rows. */
  realTokens: number;
  /** Sum of each batch's longest length times its rows: what the model computes on. */
  paddedTokens: number;
  /** Sum of the batches' compute time inside the inference threads, in milliseconds. */
  computeMs: number;
}

/** One finished batch, as `BatchEngine.onBatch` listeners hear of it. */
export interface BatchDone {
  pipeline: string;
  /** The shard that ran it (its name: 'cpu', 'cuda:0', ...). */
  shard: string;
  items: number;
  /** Its compute time inside the inference thread, in milliseconds. */
  computeMs: number;
  /** Longest input times rows: what the model computed on. */
  paddedTokens: number;
  /** When it was handed to its shard and when its outputs came back (the dispatcher's clock). */
  startedAt: number;
  endedAt: number;
  /** Per item, in batch order: what was submitted with it (SubmitOptions.trace) and when. */
  traces: unknown[];
  enqueuedAt: number[];
}

export class Dispatcher {
  readonly stats: DispatchStats = {
    batches: 0,
    items: 0,
    realTokens: 0,
    paddedTokens: 0,
    computeMs: 0,
  };
  private readonly batchListeners = new Set<(batch: BatchDone) => void>();
  private readonly queues: Map<string, BatchQueue<Pending>>;
  private readonly shards: readonly Shard[];
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private nextQueue = 0;
  private flushing = false;
  private readonly idleWaiters = new Set<() => void>();
  private inFlight = 0;

  constructor(
    queues: Map<string, BatchQueue<Pending>>,
    shards: readonly Shard[],
    now: () => number,
  ) {
    this.queues = queues;
    this.shards = shards;
    this.now = now;
  }

  /** Calls `listener` after every finished batch; returns the unsubscribe function. */
  onBatch(listener: (batch: BatchDone) => void): () => void {
    this.batchListeners.add(listener);
    return () => this.batchListeners.delete(listener);
  }

  /** Call after anything that may make a batch ready or a shard free. */
  pump(): void {
    const names = [...this.queues.keys()];
    let soonest = Infinity;
    for (;;) {
      const shard = this.freestShard();
      if (shard === undefined) break;
      let dispatched = false;
      soonest = Infinity;
      for (let i = 0; i < names.length && !dispatched; i += 1) {
        const name = names[(this.nextQueue + i) % names.length] as string;
        const queue = this.queues.get(name) as BatchQueue<Pending>;
        const cut = queue.cut(this.now(), this.flushing);
        for (const item of cut.expired)
          item.payload.reject(
            new DeadlineExceededError(
              `deadline passed after ${this.now() - item.enqueuedAt} ms in the '${name}' queue; it never ran`,
            ),
          );
        for (const item of cut.cancelled)
          item.payload.reject(new CancelledError(`cancelled while queued for '${name}'`));
        if (cut.batch !== undefined) {
          this.nextQueue = (this.nextQueue + i + 1) % names.length;
          this.dispatch(shard, name, cut.batch);
          dispatched = true;
        } else soonest = Math.min(soonest, cut.waitMs);
      }
      if (!dispatched) break;
    }
    this.armTimer(soonest);
    this.notifyIfIdle();
  }

  /** Cuts whatever is queued without waiting for full batches (shutdown). */
  flush(): void {
    this.flushing = true;
    this.pump();
  }

  /** Resolves once every queue is empty and no batch is running. */
  whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      this.idleWaiters.add(resolve);
      this.notifyIfIdle();
    });
  }

  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private freestShard(): Shard | undefined {
    let best: Shard | undefined;
    for (const shard of this.shards) {
      if (shard.hasRoom && (best === undefined || shard.inFlight < best.inFlight)) best = shard;
    }
    return best;
  }

  private dispatch(shard: Shard, pipeline: string, batch: QueueItem<Pending>[]): void {
    const longest = batch.reduce((max, item) => Math.max(max, item.tokens), 0);
    const rows = batch.reduce((sum, item) => sum + item.rows, 0);
    const startedAt = this.now();
    this.stats.batches += 1;
    this.stats.items += batch.length;
    this.stats.paddedTokens += longest * rows;
    this.stats.realTokens += batch.reduce((sum, item) => sum + item.tokens * item.rows, 0);
    this.inFlight += 1;
    shard
      .run(
        pipeline,
        batch.map((item) => item.payload.input),
        carriedOf(batch),
      )
      .then(
        ({ outputs, computeMs }) => {
          this.stats.computeMs += computeMs;
          if (this.batchListeners.size > 0) {
            const done: BatchDone = {
              pipeline,
              shard: shard.spec.name,
              items: batch.length,
              computeMs,
              paddedTokens: longest * rows,
              startedAt,
              endedAt: this.now(),
              traces: batch.map((item) => item.payload.trace),
              enqueuedAt: batch.map((item) => item.enqueuedAt),
            };
            for (const listener of this.batchListeners) listener(done);
          }
          batch.forEach((item, i) => item.payload.resolve(outputs[i]));
        },
        (error: unknown) => this.failed(shard, pipeline, batch, error),
      )
      .finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
  }

  /**
   * One input a pipeline refuses (an InputError) fails its whole batch. Its batch mates deserve
   * better: the batch is split and each input runs alone, so only the culprit fails.
   */
  private failed(
    shard: Shard,
    pipeline: string,
    batch: QueueItem<Pending>[],
    error: unknown,
  ): Promise<void> | void {
    if (batch.length === 1 || !(error instanceof InputError)) {
      for (const item of batch) item.payload.reject(error);
      return;
    }
    return Promise.all(
      batch.map((item) =>
        shard.run(pipeline, [item.payload.input], carriedOf([item])).then(
          ({ outputs }) => item.payload.resolve(outputs[0]),
          (alone: unknown) => item.payload.reject(alone),
        ),
      ),
    ).then(() => undefined);
  }

  private armTimer(waitMs: number): void {
    if (!Number.isFinite(waitMs)) return;
    const at = this.now() + waitMs;
    if (this.timer !== undefined && this.timerAt <= at) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.pump();
      },
      Math.max(0, Math.ceil(waitMs)),
    );
  }

  private notifyIfIdle(): void {
    if (this.idleWaiters.size === 0 || this.inFlight > 0) return;
    for (const queue of this.queues.values()) if (queue.size > 0) return;
    for (const resolve of this.idleWaiters) resolve();
    this.idleWaiters.clear();
  }
}

/** The batch's carried encodings, or undefined when none of its items carries one. */
function carriedOf(batch: readonly QueueItem<Pending>[]): (CarriedEncoding | null)[] | undefined {
  if (!batch.some((item) => item.payload.carried !== undefined)) return undefined;
  return batch.map((item) => item.payload.carried ?? null);
}
