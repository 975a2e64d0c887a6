// Mean pooling summed four attended tokens a pass must equal the plain per-value sum for every
// vector size, for attended counts that leave a remainder of tokens, at any offset in the batch's
// output.
import { describe, expect, it } from 'vitest';
import { maskedMean } from '../../../src/pipelines/runtime/math.ts';

function plainMean(data: Float32Array, base: number, size: number, mask: number[]): number[] {
  const sum = new Array<number>(size).fill(0);
  let count = 0;
  mask.forEach((m, t) => {
    if (m !== 1) return;
    count += 1;
    for (let h = 0; h < size; h += 1) sum[h]! += data[base + t * size + h]!;
  });
  return sum.map((v) => Math.fround(v / Math.max(count, 1e-9)));
}

describe('maskedMean', () => {
  let seed = 7;
  const random = (): number => ((seed = (seed * 16807) % 2147483647) / 2147483647) * 2 - 1;
  for (const size of [1, 3, 4, 5, 7, 384, 385]) {
    it(`equals the plain sum over attended vectors, size ${size}`, () => {
      const tokens = 9;
      const rows = 3;
      const data = Float32Array.from({ length: rows * tokens * size }, random);
      const mask = [1, 1, 0, 1, 1, 1, 0, 0, 1];
      for (let row = 0; row < rows; row += 1) {
        const base = row * tokens * size;
        expect(Array.from(maskedMean(data, base, size, mask))).toEqual(
          plainMean(data, base, size, mask),
        );
      }
    });
  }

  it('gives zeros when no token is attended', () => {
    const data = Float32Array.from({ length: 10 }, () => 1);
    expect(Array.from(maskedMean(data, 0, 5, [0, 0]))).toEqual([0, 0, 0, 0, 0]);
  });
});
