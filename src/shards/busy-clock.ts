// A thread runs one batch while the next one waits (shard.ts, BATCHES_PER_THREAD), so a batch's
// time from arrival to reply would count its wait behind the other. Its compute time is instead
// the thread's time since it last finished something (or since the batch arrived, if later):
// the metrics' inference seconds then add up to the thread's busy time, as before.
export class BusyClock {
  private lastEnd = -Infinity;
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
  }

  /** Call when a batch finishes with the time it arrived; returns its compute milliseconds. */
  finish(arrivedAt: number): number {
    const end = this.now();
    const ms = end - Math.max(arrivedAt, this.lastEnd);
    this.lastEnd = Math.max(this.lastEnd, end);
    return Math.max(ms, 0);
  }
}
