// The lanes a member holds across rebalances: kept partitions keep their lanes, revoked and
// restarted ones retire, and (exactly-once) a partition's next lane starts only after its
// predecessor's last transaction settled and, if the partition had left, its producer went.
import { describe, expect, it } from 'vitest';
import { AssignedLanes } from '../../../../src/connectors/kafka/assigned-lanes.ts';
import type { TopicPartition } from '../../../../src/connectors/kafka/driver.ts';
import { PartitionLane } from '../../../../src/connectors/kafka/partition-lane.ts';

const tp = (partition: number): TopicPartition => ({ topic: 't', partition });
const tps = (...partitions: number[]): TopicPartition[] => partitions.map(tp);

function lanesWith(exactlyOnce: boolean) {
  const made: { lane: PartitionLane; old: PartitionLane | undefined; after: Promise<void> }[] = [];
  const events: string[] = [];
  const lanes = new AssignedLanes({
    freshLane: (part, old, after) => {
      const lane = new PartitionLane(part, old?.committed);
      made.push({ lane, old, after });
      void after.then(() => events.push(`after ${part.partition}`));
      return lane;
    },
    ...(exactlyOnce
      ? {
          release: (part: TopicPartition) => {
            events.push(`release ${part.partition}`);
            return Promise.resolve();
          },
        }
      : {}),
  });
  return { lanes, made, events };
}

/** A transaction of the lane that commits when the test says so. */
function committing(lane: PartitionLane): () => void {
  let done = (): void => undefined;
  lane.committing = new Promise<void>((resolve) => (done = resolve));
  return done;
}

const flush = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('AssignedLanes', () => {
  it('a kept partition keeps its lane; a revoked one retires and is no longer found', () => {
    const { lanes } = lanesWith(false);
    lanes.assign({ partitions: tps(0, 1), restarted: tps(0, 1) });
    const [zero, one] = [lanes.get(tp(0)), lanes.get(tp(1))];
    expect(lanes.revoke(tps(1, 2))).toEqual(tps(1));
    lanes.assign({ partitions: tps(0), restarted: [] });
    expect(lanes.get(tp(0))).toBe(zero);
    expect(zero?.retired).toBe(false);
    expect(one?.retired).toBe(true);
    expect(lanes.get(tp(1))).toBeUndefined();
  });

  it('a restarted partition gets a fresh lane, and its old lane retires', () => {
    const { lanes, made } = lanesWith(false);
    lanes.assign({ partitions: tps(0), restarted: tps(0) });
    const first = lanes.get(tp(0));
    lanes.assign({ partitions: tps(0), restarted: tps(0) });
    expect(first?.retired).toBe(true);
    expect(lanes.get(tp(0))).not.toBe(first);
    expect(made[1]?.old).toBe(first);
  });

  it('exactly-once: a partition revoked mid-transaction and given back starts after it', async () => {
    const { lanes, made, events } = lanesWith(true);
    lanes.assign({ partitions: tps(0), restarted: tps(0) });
    const first = lanes.get(tp(0)) as PartitionLane;
    first.committed = '3';
    const commit = committing(first);
    lanes.revoke(tps(0));
    lanes.assign({ partitions: tps(0), restarted: tps(0) });
    expect(made[1]?.old).toBe(first);
    await flush();
    expect(events).toEqual(['after 0']);
    commit();
    await flush();
    // The producer goes first, then the new lane may register the partition's id again.
    expect(events).toEqual(['after 0', 'release 0', 'after 0']);
  });

  it('exactly-once: a restarted partition that stayed waits for the transaction, keeps its producer', async () => {
    const { lanes, made, events } = lanesWith(true);
    lanes.assign({ partitions: tps(0, 1), restarted: tps(0, 1) });
    const first = lanes.get(tp(0)) as PartitionLane;
    const commit = committing(first);
    lanes.assign({ partitions: tps(0), restarted: tps(0) });
    await flush();
    // Partition 1 left with nothing in flight: released at once.
    expect(events).toEqual(['after 0', 'after 1', 'release 1']);
    commit();
    await flush();
    expect(events).toEqual(['after 0', 'after 1', 'release 1', 'after 0']);
    expect(made[2]?.old).toBe(first);
  });
});
