// Offset tracking and commit policy for one partition. Records complete out of order, but only
// the prefix of received offsets that are all complete may be committed (at-least-once). Offsets
// are compared in the order they were received, not by arithmetic, because transaction markers
// and compaction leave gaps.
export class PartitionOffsets {
  /** Received offsets not yet part of the committable prefix, in arrival order. */
  private readonly pending: bigint[] = [];
  private readonly completed = new Set<bigint>();
  private committable: bigint | undefined;
  private lastReceived: bigint | undefined;

  /** Next offset a fetch must deliver; earlier ones were already received. */
  get next(): bigint | undefined {
    return this.lastReceived === undefined ? undefined : this.lastReceived + 1n;
  }

  get inFlight(): number {
    return this.pending.length;
  }

  receive(offset: string): void {
    const value = BigInt(offset);
    this.pending.push(value);
    this.lastReceived = value;
  }

  complete(offset: string): void {
    this.completed.add(BigInt(offset));
    while (this.pending.length > 0 && this.completed.has(this.pending[0] as bigint)) {
      const done = this.pending.shift() as bigint;
      this.completed.delete(done);
      this.committable = done + 1n;
    }
  }

  /** The offset to commit (last complete record of the prefix + 1), if any record completed. */
  commitPoint(): string | undefined {
    return this.committable?.toString();
  }
}

export interface CommitPolicyOptions {
  intervalMs: number;
  /** Exactly-once: a partition's transaction commits early once it holds this many outputs. */
  maxRecords?: number;
  /** Exactly-once: ... or once they take this many bytes (one transaction stays sendable). */
  maxBytes?: number;
}

/**
 * When tracked offsets are committed (kafkajs keeps this beside its offset tracking too): every
 * intervalMs and at stop, or sooner for a partition whose waiting transaction reached its bounds.
 */
export class CommitPolicy {
  private readonly options: CommitPolicyOptions;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: CommitPolicyOptions) {
    this.options = options;
  }

  /**
   * What a partition commits now: its commit point, once it moved past its last commit. A point
   * below it comes from records read again from an older commit (kafkajs restarts a partition
   * from the offset it reads, which can lag behind the last transaction): committing it would
   * move the group back.
   */
  committable(offsets: PartitionOffsets, committed: string | undefined): string | undefined {
    const offset = offsets.commitPoint();
    if (offset === undefined || committed === undefined) return offset;
    return BigInt(offset) > BigInt(committed) ? offset : undefined;
  }

  /** Whether a transaction holding `records` outputs of `bytes` commits before the interval. */
  full(records: number, bytes: number): boolean {
    return (
      records >= (this.options.maxRecords ?? Infinity) ||
      bytes >= (this.options.maxBytes ?? Infinity)
    );
  }

  /** Calls `commit` every interval until stop(). */
  start(commit: () => void): void {
    this.timer = setInterval(commit, this.options.intervalMs);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
