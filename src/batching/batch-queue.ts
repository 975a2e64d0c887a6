// One pipeline's queue of waiting inputs, and the rule that cuts them into batches:
// - a batch is built around an anchor, the item that has waited longest in the most urgent
//   priority level (or any item past maxWaitMs, whatever its level), so no item starves;
// - its mates are the anchor's nearest neighbours by token length among the oldest `sortWindow`
//   items of that level, which keeps padding low;
// - the batch grows while it stays within maxBatchSize and maxBatchTokens (longest x rows);
// - it is cut when it is full or its anchor has waited maxWaitMs.
// The queue is synchronous and takes the time as an argument, so tests drive it with a fake clock.
import type { CompiledBatcherOptions } from './batcher-options.ts';

export interface QueueItem<T> {
  readonly id: number;
  readonly payload: T;
  /** Token length of the item's longest row. */
  readonly tokens: number;
  /** Rows it adds to a batch (question-answering windows, zero-shot labels); usually 1. */
  readonly rows: number;
  readonly priority: number;
  readonly enqueuedAt: number;
  /** Absolute time after which the item must not run. */
  readonly deadline: number | undefined;
  readonly signal: AbortSignal | undefined;
}

export interface PushOptions {
  rows?: number;
  priority?: number;
  deadline?: number;
  signal?: AbortSignal;
}

export type Pressure = 'pause' | 'resume';

export interface CutResult<T> {
  /** Present when a batch is ready. */
  batch?: QueueItem<T>[];
  /** Items whose deadline passed or whose signal aborted; they leave the queue unrun. */
  expired: QueueItem<T>[];
  cancelled: QueueItem<T>[];
  /** When nothing is ready: how long until the anchor's wait runs out (Infinity when empty). */
  waitMs: number;
}

export class BatchQueue<T> {
  private readonly options: CompiledBatcherOptions;
  private readonly levels: QueueItem<T>[][];
  private nextId = 0;
  private count = 0;
  private paused = false;
  private readonly pressureListeners = new Set<(p: Pressure) => void>();

  constructor(options: CompiledBatcherOptions) {
    this.options = options;
    this.levels = Array.from({ length: options.priorities }, () => []);
  }

  get size(): number {
    return this.count;
  }

  /** Padded tokens one message to a thread may carry over several of this queue's batches. */
  get messageTokens(): number {
    return this.options.maxMessageTokens;
  }

  get isPaused(): boolean {
    return this.paused;
  }

  onPressure(listener: (pressure: Pressure) => void): () => void {
    this.pressureListeners.add(listener);
    return () => this.pressureListeners.delete(listener);
  }

  push(payload: T, tokens: number, now: number, options: PushOptions = {}): QueueItem<T> {
    const priority = Math.min(
      Math.max(0, Math.trunc(options.priority ?? 1)),
      this.levels.length - 1,
    );
    const item: QueueItem<T> = {
      id: this.nextId++,
      payload,
      tokens: Math.max(1, tokens),
      rows: Math.max(1, options.rows ?? 1),
      priority,
      enqueuedAt: now,
      deadline: options.deadline,
      signal: options.signal,
    };
    this.levels[priority]?.push(item);
    this.count += 1;
    if (!this.paused && this.count >= this.options.maxQueued) this.setPressure('pause');
    return item;
  }

  /**
   * Cuts the next batch if one is due at `now`; `flush` cuts even if not full or not due. With
   * `maxPadded`, a due batch of more padded tokens stays queued (a message's room, dispatcher.ts).
   */
  cut(now: number, flush = false, maxPadded = Infinity): CutResult<T> {
    const result: CutResult<T> = { expired: [], cancelled: [], waitMs: Infinity };
    this.dropDead(now, result);
    const anchor = this.anchor(now);
    if (anchor === undefined) return this.settle(result);
    const { batch, full } = this.gather(anchor);
    const waited = now - anchor.enqueuedAt;
    if (paddedTokens(batch) > maxPadded) return this.settle(result);
    if (flush || full || waited >= this.options.maxWaitMs) {
      this.remove(batch);
      result.batch = batch;
    } else {
      result.waitMs = this.options.maxWaitMs - waited;
    }
    return this.settle(result);
  }

  /** Removes and returns everything still queued (for shutdown). */
  drainAll(): QueueItem<T>[] {
    const all = this.levels.flatMap((level) => level.splice(0));
    this.count = 0;
    this.settle({ expired: [], cancelled: [], waitMs: Infinity });
    return all;
  }

  private dropDead(now: number, result: CutResult<T>): void {
    for (const level of this.levels) {
      let kept = 0;
      for (const item of level) {
        if (item.signal?.aborted === true) result.cancelled.push(item);
        else if (item.deadline !== undefined && item.deadline <= now) result.expired.push(item);
        else level[kept++] = item;
      }
      this.count -= level.length - kept;
      level.length = kept;
    }
  }

  private anchor(now: number): QueueItem<T> | undefined {
    let oldest: QueueItem<T> | undefined;
    for (const level of this.levels) {
      const head = level[0];
      if (head !== undefined && (oldest === undefined || head.enqueuedAt < oldest.enqueuedAt))
        oldest = head;
    }
    if (oldest === undefined) return undefined;
    // Past its wait bound, the oldest item goes next whatever its priority: that bounds every wait.
    if (now - oldest.enqueuedAt >= this.options.maxWaitMs) return oldest;
    return this.levels.find((level) => level.length > 0)?.[0];
  }

  private gather(anchor: QueueItem<T>): { batch: QueueItem<T>[]; full: boolean } {
    const level = this.levels[anchor.priority] ?? [];
    const window = level.slice(0, this.options.sortWindow);
    // In arrival order the anchor (its level's head) is first, so only right-hand mates follow.
    if (this.options.order === 'length') window.sort((a, b) => a.tokens - b.tokens || a.id - b.id);
    const at = window.indexOf(anchor);
    let left = at - 1;
    let right = at + 1;
    const batch = [anchor];
    let longest = anchor.tokens;
    let rows = anchor.rows;
    let full = false;
    const fits = (item: QueueItem<T>): boolean =>
      batch.length < this.options.maxBatchSize &&
      Math.max(longest, item.tokens) * (rows + item.rows) <= this.options.maxBatchTokens;
    while (left >= 0 || right < window.length) {
      const l = left >= 0 ? window[left] : undefined;
      const r = right < window.length ? window[right] : undefined;
      // Take the neighbour closest in length to the anchor; ties go to the shorter one.
      const preferLeft =
        r === undefined ||
        (l !== undefined && anchor.tokens - l.tokens <= r.tokens - anchor.tokens);
      const first = preferLeft ? l : r;
      const second = preferLeft ? r : l;
      const pick =
        first !== undefined && fits(first)
          ? first
          : second !== undefined && fits(second)
            ? second
            : undefined;
      if (pick === undefined) {
        full = true;
        break;
      }
      batch.push(pick);
      longest = Math.max(longest, pick.tokens);
      rows += pick.rows;
      if (pick === l) left -= 1;
      else right += 1;
    }
    if (batch.length >= this.options.maxBatchSize) full = true;
    return { batch, full };
  }

  private remove(batch: readonly QueueItem<T>[]): void {
    const chosen = new Set(batch);
    for (const level of this.levels) {
      const before = level.length;
      let kept = 0;
      for (const item of level) if (!chosen.has(item)) level[kept++] = item;
      level.length = kept;
      this.count -= before - kept;
    }
  }

  private settle(result: CutResult<T>): CutResult<T> {
    if (this.paused && this.count <= this.options.resumeAt) this.setPressure('resume');
    return result;
  }

  private setPressure(pressure: Pressure): void {
    this.paused = pressure === 'pause';
    for (const listener of this.pressureListeners) listener(pressure);
  }
}

/** What a batch costs the model: its longest item's tokens times its rows. */
export function paddedTokens(batch: readonly QueueItem<unknown>[]): number {
  let longest = 0;
  let rows = 0;
  for (const item of batch) {
    longest = Math.max(longest, item.tokens);
    rows += item.rows;
  }
  return longest * rows;
}
