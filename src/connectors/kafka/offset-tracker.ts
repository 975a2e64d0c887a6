// Which offsets of one partition may be committed: records complete out of order, but only the
// prefix of received offsets that are all complete may be committed (at-least-once). Offsets are
// compared in the order they were received, not by arithmetic, because transaction markers and
// compaction leave gaps.
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
