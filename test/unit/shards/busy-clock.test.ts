import { describe, expect, it } from 'vitest';
import { BusyClock } from '../../../src/shards/busy-clock.ts';

function clockAt(times: number[]): BusyClock {
  return new BusyClock(() => times.shift() ?? Number.NaN);
}

describe('BusyClock', () => {
  it('gives a batch on an idle thread its time from arrival', () => {
    const clock = clockAt([30, 100]);
    expect(clock.finish(10)).toBe(20);
    expect(clock.finish(90)).toBe(10); // idle from 30 to 90: not counted
  });

  it('gives a batch that waited behind another only the time after that one ended', () => {
    // A arrives at 0 and ends at 40; B arrived at 5 (its tokenization overlapped A) and ends at 70.
    const clock = clockAt([40, 70]);
    expect(clock.finish(0)).toBe(40);
    expect(clock.finish(5)).toBe(30);
  });

  it('never counts negative time when batches end out of their arrival order', () => {
    const clock = clockAt([50, 45]);
    expect(clock.finish(20)).toBe(30);
    expect(clock.finish(10)).toBe(0);
  });
});
