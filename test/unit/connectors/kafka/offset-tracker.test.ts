// A partition's commit point is the end of its prefix of completed records, in arrival order
// (transaction markers leave gaps in the offsets); the policy commits it only once it moved past
// the partition's last commit, never back.
import { describe, expect, it } from 'vitest';
import { CommitPolicy, PartitionOffsets } from '../../../../src/connectors/kafka/offset-tracker.ts';

function received(...offsets: number[]): PartitionOffsets {
  const tracked = new PartitionOffsets();
  for (const offset of offsets) tracked.receive(String(offset));
  return tracked;
}

describe('PartitionOffsets', () => {
  it('commits after the completed prefix only, across the gaps markers leave', () => {
    const tracked = received(4, 5, 7, 8);
    expect(tracked.commitPoint()).toBeUndefined();
    tracked.complete('5');
    expect(tracked.commitPoint()).toBeUndefined();
    tracked.complete('4');
    expect(tracked.commitPoint()).toBe('6');
    tracked.complete('8');
    expect(tracked.commitPoint()).toBe('6');
    expect(tracked.inFlight).toBe(2);
    tracked.complete('7');
    expect(tracked.commitPoint()).toBe('9');
    expect(tracked.inFlight).toBe(0);
    expect(tracked.next).toBe(9n);
  });
});

describe('CommitPolicy.committable', () => {
  const policy = new CommitPolicy({ intervalMs: 1_000 });

  it('gives the commit point once it moved past the last commit', () => {
    const tracked = received(0, 1, 2);
    tracked.complete('0');
    expect(policy.committable(tracked, undefined)).toBe('1');
    expect(policy.committable(tracked, '1')).toBeUndefined();
    tracked.complete('1');
    tracked.complete('2');
    expect(policy.committable(tracked, '1')).toBe('3');
  });

  it('never moves the group back: records read again below the last commit commit nothing', () => {
    // Read again from an older commit (0) after a transaction committed 3.
    const tracked = received(0, 1, 2, 3);
    tracked.complete('0');
    tracked.complete('1');
    expect(policy.committable(tracked, '3')).toBeUndefined();
    tracked.complete('2');
    expect(policy.committable(tracked, '3')).toBeUndefined();
    tracked.complete('3');
    expect(policy.committable(tracked, '3')).toBe('4');
    // Compared as numbers, not strings ('10' sorts before '9').
    const far = received(9);
    far.complete('9');
    expect(policy.committable(far, '9')).toBe('10');
  });
});
