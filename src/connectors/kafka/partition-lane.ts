// What the Kafka source holds for one assigned partition during one assignment: its offsets,
// its in-order writer, and (exactly-once) the outputs staged for its next transaction. A
// rebalance or a rewind retires the lane; a retired lane never writes or commits again, and
// the records it held are read again by whoever owns the partition next, so retiring also aborts
// the lane's signal: work still running on those records (a long generation) is cancelled.
import { InOrderWriter } from '../../route/in-order.ts';
import type { ProducedMessage, TopicPartition } from './driver.ts';
import { PartitionOffsets } from './offset-tracker.ts';

export interface StagedMessage {
  /** The input offset it came from: it commits with that offset's transaction. */
  offset: bigint;
  topic: string;
  message: ProducedMessage;
  /** Its size on the wire, for the transaction's byte bound. */
  bytes: number;
}

export class PartitionLane {
  readonly tp: TopicPartition;
  readonly key: string;
  readonly offsets = new PartitionOffsets();
  readonly writer = new InOrderWriter();
  private readonly abort = new AbortController();
  /** Aborted when the lane retires; every record of the lane carries it. */
  readonly signal: AbortSignal = this.abort.signal;
  /** The first offset this lane received. */
  first: string | undefined;
  /** Paused because it holds its limit of records in flight. */
  full = false;
  /** The offset last committed for this partition by this lane (or its predecessor). */
  committed: string | undefined;
  /** Exactly-once: outputs and dead letters waiting for the next transaction. */
  staged: StagedMessage[] = [];
  /** Exactly-once: the bytes of `staged`. */
  stagedBytes = 0;
  /** Held back after a failed write: not resumed until its backoff ends. */
  held = false;
  /** Exactly-once: resolves when the partition's producer fenced older holders. */
  ready: Promise<void> = Promise.resolve();
  /** Exactly-once: records below this offset are already in a committed transaction. */
  floor: bigint | undefined;
  /** Exactly-once: the transaction in progress for this partition, if any. */
  committing: Promise<void> | undefined;

  constructor(tp: TopicPartition, committed?: string) {
    this.tp = tp;
    this.key = laneKey(tp);
    this.committed = committed;
  }

  get retired(): boolean {
    return this.signal.aborted;
  }

  /** The lane's records belong to the partition's next reader now: stop working on them. */
  retire(): void {
    this.abort.abort();
  }

  /** Where to read again after a failure: after the last committed record, else the first held. */
  rewindPoint(): string | undefined {
    return this.committed ?? this.first;
  }
}

export function laneKey(tp: TopicPartition): string {
  return `${tp.topic}\u0000${tp.partition}`;
}
