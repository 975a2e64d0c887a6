// The benchmark's search space (bench/lib/raw-pool.ts): every thread split uses every core once,
// and length-bucketed batches respect both the token budget and the row cap.
import { describe, expect, it } from 'vitest';
import { cutBatches, threadSplits } from '../../../bench/lib/raw-pool.ts';

const rows = (lengths: number[]): number[][] =>
  lengths.map((n) => Array.from({ length: n }, () => 1));
const shape = (batches: number[][][]): number[][] => batches.map((b) => b.map((r) => r.length));

describe('bench layouts', () => {
  it('splits the cores every way that uses all of them', () => {
    expect(threadSplits(2)).toEqual([
      { workers: 2, intraOpThreads: 1 },
      { workers: 1, intraOpThreads: 2 },
    ]);
    expect(threadSplits(12).map((s) => `${s.workers}x${s.intraOpThreads}`)).toEqual([
      '12x1',
      '6x2',
      '4x3',
      '3x4',
      '2x6',
      '1x12',
    ]);
  });

  it('cuts sorted rows into fixed batches or under a padded-token budget', () => {
    const input = rows([50, 3, 10, 4, 100, 5, 9]);
    expect(shape(cutBatches(input, { kind: 'rows', size: 3 }))).toEqual([
      [3, 4, 5],
      [9, 10, 50],
      [100],
    ]);
    // Longest x rows within 40: short rows go many at a time, a row over the budget alone.
    expect(shape(cutBatches(input, { kind: 'tokens', budget: 40, maxRows: 3 }))).toEqual([
      [3, 4, 5],
      [9, 10],
      [50],
      [100],
    ]);
    // Three rows of 10 would pad to 30 tokens: over a budget of 25.
    expect(
      shape(cutBatches(rows([10, 10, 10]), { kind: 'tokens', budget: 25, maxRows: 8 })),
    ).toEqual([[10, 10], [10]]);
    expect(shape(cutBatches(input, { kind: 'tokens', budget: 1000, maxRows: 2 }))).toEqual([
      [3, 4],
      [5, 9],
      [10, 50],
      [100],
    ]);
  });

  it('keeps each row itself, so a batch of rows finds its texts (raw_shared_tokenizing)', () => {
    const input = rows([7, 2, 5]);
    const batches = cutBatches(input, { kind: 'tokens', budget: 10, maxRows: 2 });
    const textOf = new Map(input.map((row, i) => [row, `text ${i}`]));
    expect(batches.map((b) => b.map((row) => textOf.get(row)))).toEqual([
      ['text 1', 'text 2'],
      ['text 0'],
    ]);
  });
});
