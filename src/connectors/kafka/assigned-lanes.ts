// The lanes of the partitions this member holds, and their retirement. A revoked partition's lane
// retires: its records in flight belong to the partition's next owner, and its running
// generations are cancelled. At a (re)join a kept partition keeps its lane and records in flight;
// a restarted one gets a fresh lane and its old lane retires.
//
// Exactly-once adds one rule. A retired lane's last transaction may still be committing (its
// offsets go out with the membership of the moment, so the broker takes them), and a partition
// can come back to this member while it does, for example after a rejoin under a new member id.
// Its next lane must start after that transaction: read before it commits, the partition's
// committed offset is the one before it, and its records would be processed and committed twice.
// So every fresh lane is handed the moment its predecessor settled (`after`), and a lane retired
// for a partition that left stays known until then. A partition that left releases its producer
// once its last transaction settled, before a later lane of the partition registers it again.
import type { Assignment, TopicPartition } from './driver.ts';
import { laneKey, type PartitionLane } from './partition-lane.ts';

export interface AssignedLanesOptions {
  /**
   * A lane for a partition that starts from its commit. `old` is the partition's previous lane
   * here, if any (retired now); `after` resolves once its last transaction settled and, for a
   * partition that had left, its producer was released.
   */
  freshLane(
    tp: TopicPartition,
    old: PartitionLane | undefined,
    after: Promise<void>,
  ): PartitionLane;
  /** Exactly-once: the partition left this member (its producer can go). Undefined at-least-once. */
  release?: (tp: TopicPartition) => Promise<void>;
}

interface Departed {
  lane: PartitionLane;
  settled: Promise<void>;
}

const settledNow = Promise.resolve();

export class AssignedLanes {
  private readonly options: AssignedLanesOptions;
  private lanes = new Map<string, PartitionLane>();
  /** Retired lanes of partitions that left, until their last transaction settled. */
  private readonly departed = new Map<string, Departed>();

  constructor(options: AssignedLanesOptions) {
    this.options = options;
  }

  get(tp: TopicPartition): PartitionLane | undefined {
    return this.lanes.get(laneKey(tp));
  }

  has(key: string): boolean {
    return this.lanes.has(key);
  }

  all(): PartitionLane[] {
    return [...this.lanes.values()];
  }

  /** A failed lane's successor (a rewind) takes the partition over; the caller retired the old. */
  replace(fresh: PartitionLane): void {
    this.lanes.set(fresh.key, fresh);
  }

  /** Partitions taken away: their lanes retire. Returns those that had a lane here. */
  revoke(revoked: TopicPartition[]): TopicPartition[] {
    const retired: TopicPartition[] = [];
    for (const tp of revoked) {
      const lane = this.lanes.get(laneKey(tp));
      if (lane === undefined) continue;
      this.lanes.delete(lane.key);
      // The partition's next lane here, if it comes back, finds the wait in `departed`.
      void this.retire(lane, true);
      retired.push(tp);
    }
    return retired;
  }

  /**
   * This member's whole assignment after a (re)join: kept partitions keep their lanes, restarted
   * ones get fresh lanes (after their predecessors), lanes of partitions no longer assigned retire.
   */
  assign(assignment: Assignment): void {
    const previous = this.lanes;
    const restarted = new Set(assignment.restarted.map(laneKey));
    this.lanes = new Map();
    for (const tp of assignment.partitions) {
      const key = laneKey(tp);
      const kept = previous.get(key);
      if (kept !== undefined && !restarted.has(key)) {
        this.lanes.set(key, kept);
        continue;
      }
      const departed = this.departed.get(key);
      const [old, after] =
        kept !== undefined
          ? [kept, this.retire(kept, false)]
          : [departed?.lane, departed?.settled ?? settledNow];
      this.lanes.set(key, this.options.freshLane(tp, old, after));
    }
    for (const [key, old] of previous) if (!this.lanes.has(key)) void this.retire(old, true);
  }

  /**
   * The lane's records belong to the partition's next reader; `gone`: the partition left us.
   * Resolves once its last transaction settled (and a departed partition's producer went).
   */
  private retire(lane: PartitionLane, gone: boolean): Promise<void> {
    lane.retire();
    const release = gone ? this.options.release : undefined;
    if (lane.committing === undefined && release === undefined) return settledNow;
    const settled = (lane.committing ?? settledNow)
      .catch(() => undefined)
      .then(() => release?.(lane.tp))
      // A producer that fails to close is gone anyway; the next registration fences it.
      .catch(() => undefined);
    if (gone) {
      this.departed.set(lane.key, { lane, settled });
      void settled.then(() => {
        if (this.departed.get(lane.key)?.lane === lane) this.departed.delete(lane.key);
      });
    }
    return settled;
  }
}
