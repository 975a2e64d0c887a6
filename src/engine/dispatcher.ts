// Moves batches from the pipelines' queues to the shards. A shard takes a message whenever it has
// room (each thread holds a running message and the next one); a message carries a batch, or
// several of a backlog (batching.maxMessageTokens); queues are visited round-robin so
// one busy pipeline cannot hold the others back; a timer wakes the loop when the oldest waiting
// item's maxWaitMs runs out.
import { CancelledError, DeadlineExceededError, InputError } from '../errors.ts';
import {
  paddedTokens,
  type BatchQueue,
  type CutResult,
  type QueueItem,
} from '../batching/batch-queue.ts';
import type { BatchRun, Shard } from '../shards/shard.ts';
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
        const cut = this.cut(name, queue);
        if (cut.batch !== undefined) {
          this.nextQueue = (this.nextQueue + i + 1) % names.length;
          this.dispatch(shard, name, this.message(name, queue, cut.batch));
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

  /** The queue's next due batch, if any (within `room` padded tokens); the dead leave it failed. */
  private cut(name: string, queue: BatchQueue<Pending>, room = Infinity): CutResult<Pending> {
    const cut = queue.cut(this.now(), this.flushing, room);
    for (const item of cut.expired)
      item.payload.reject(
        new DeadlineExceededError(
          `deadline passed after ${this.now() - item.enqueuedAt} ms in the '${name}' queue; it never ran`,
        ),
      );
    for (const item of cut.cancelled)
      item.payload.reject(new CancelledError(`cancelled while queued for '${name}'`));
    return cut;
  }

  /**
   * The batches one message to a thread carries: the first, then whichever of the queue's next
   * batches are already due and fit the message's room (maxMessageTokens). Only a backlog fills
   * a message, so no batch waits for mates it would not have waited for alone.
   */
  private message(
    name: string,
    queue: BatchQueue<Pending>,
    first: QueueItem<Pending>[],
  ): QueueItem<Pending>[][] {
    const batches = [first];
    let room = queue.messageTokens - paddedTokens(first);
    while (room > 0) {
      const next = this.cut(name, queue, room).batch;
      if (next === undefined) break;
      batches.push(next);
      room -= paddedTokens(next);
    }
    return batches;
  }

  private freestShard(): Shard | undefined {
    let best: Shard | undefined;
    for (const shard of this.shards) {
      if (shard.hasRoom && (best === undefined || shard.inFlight < best.inFlight)) best = shard;
    }
    return best;
  }

  private dispatch(shard: Shard, pipeline: string, batches: QueueItem<Pending>[][]): void {
    const startedAt = this.now();
    for (const batch of batches) {
      this.stats.batches += 1;
      this.stats.items += batch.length;
      this.stats.paddedTokens += paddedTokens(batch);
      this.stats.realTokens += batch.reduce((sum, item) => sum + item.tokens * item.rows, 0);
    }
    this.inFlight += 1;
    shard
      .runBatches(
        pipeline,
        batches.map((batch) => {
          const encodings = carriedOf(batch);
          return {
            inputs: batch.map((item) => item.payload.input),
            ...(encodings !== undefined ? { encodings } : {}),
          };
        }),
      )
      .then(
        (settled) =>
          Promise.all(
            batches.map((batch, i) => {
              const result = settled[i];
              if (result === undefined || 'error' in result)
                return this.failed(shard, pipeline, batch, result?.error);
              this.delivered(shard, pipeline, batch, result, startedAt);
              return Promise.resolve();
            }),
          ),
        (error: unknown) =>
          Promise.all(batches.map((batch) => this.failed(shard, pipeline, batch, error))),
      )
      .finally(() => {
        this.inFlight -= 1;
        this.pump();
      });
  }

  private delivered(
    shard: Shard,
    pipeline: string,
    batch: QueueItem<Pending>[],
    { outputs, computeMs }: BatchRun,
    startedAt: number,
  ): void {
    this.stats.computeMs += computeMs;
    if (this.batchListeners.size > 0) {
      const done: BatchDone = {
        pipeline,
        shard: shard.spec.name,
        items: batch.length,
        computeMs,
        paddedTokens: paddedTokens(batch),
        startedAt,
        endedAt: this.now(),
        traces: batch.map((item) => item.payload.trace),
        enqueuedAt: batch.map((item) => item.enqueuedAt),
      };
      for (const listener of this.batchListeners) listener(done);
    }
    batch.forEach((item, i) => item.payload.resolve(outputs[i]));
  }

  /**
   * One input a pipeline refuses (an InputError) fails its whole batch. Its batch mates deserve
   * better: the batch is split and each input runs alone, so only the culprit fails.
   */
  private async failed(
    shard: Shard,
    pipeline: string,
    batch: QueueItem<Pending>[],
    error: unknown,
  ): Promise<void> {
    if (batch.length === 1 || !(error instanceof InputError)) {
      for (const item of batch) item.payload.reject(error);
      return;
    }
    await Promise.all(
      batch.map((item) =>
        shard.run(pipeline, [item.payload.input], carriedOf([item])).then(
          ({ outputs }) => item.payload.resolve(outputs[0]),
          (alone: unknown) => item.payload.reject(alone),
        ),
      ),
    );
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
