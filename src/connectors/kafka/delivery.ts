// How a Kafka source's records are delivered: what a record's writes join, and how and when each
// partition's offsets are committed. One object per delivery.mode, chosen once with the source:
// at-least-once (at-least-once.ts) commits offsets after the outputs were written, exactly-once
// (exactly-once.ts) stages the outputs into per-partition transactions that carry the offsets.
// The source keeps fetching, flow control and rewinds; it asks the delivery for lanes, so that a
// lane's readiness (exactly-once: its fencing) is the delivery's business.
import type { TransactionStager } from '../../route/sink.ts';
import type { AssignedLanesOptions } from './assigned-lanes.ts';
import type { PartitionLane } from './partition-lane.ts';

export interface Delivery extends AssignedLanesOptions {
  /** The lane that reads the partition again after `failed` retired (a rewind). */
  successor(failed: PartitionLane): PartitionLane;
  /**
   * What the writes of the lane's record at `offset` join: that record's transaction, or
   * undefined where outputs are sent as they come.
   */
  transactionFor(lane: PartitionLane, offset: string): TransactionStager | undefined;
  /** A record of the lane was written and its offset completed. */
  written(lane: PartitionLane): void;
  /** Commits what each lane may commit (every commit interval and at stop); one round at a time. */
  commit(lanes: PartitionLane[]): Promise<void>;
  /** The source stopped: what the delivery holds per partition goes. */
  close(): Promise<void>;
}
