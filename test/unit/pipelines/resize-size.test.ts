// The size rules' arithmetic where the image goldens cannot reach every branch: Python's
// round-half-to-even, and the rules' edge cases.
import { describe, expect, it } from 'vitest';
import { roundHalfEven, targetSize } from '../../../src/pipelines/vision/resize-size.ts';

describe('resize sizes', () => {
  it('rounds halves to the even neighbour, as Python 3 round()', () => {
    expect([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, 2.4999, 2.5001].map(roundHalfEven)).toEqual([
      0, 2, 2, 4, 0, -2, 2, 3,
    ]);
  });

  it('caps the long side at longest_edge with a half-even short side (DETR)', () => {
    // 80x32: 80/32*48 = 120 > 64, raw short side 64*32/80 = 25.6 -> 26, long side int(25.6*80/32).
    expect(
      targetSize(32, 80, { kind: 'shortestLongest', shortestEdge: 48, longestEdge: 64 }),
    ).toEqual({
      height: 26,
      width: 64,
    });
    // 100x36: raw short side 64*36/100 = 23.04 -> 23, long side int(23.04*100/36) = 64.
    expect(
      targetSize(36, 100, { kind: 'shortestLongest', shortestEdge: 48, longestEdge: 64 }),
    ).toEqual({ height: 23, width: 64 });
    // Already at shortest_edge: unchanged.
    expect(
      targetSize(48, 60, { kind: 'shortestLongest', shortestEdge: 48, longestEdge: 64 }),
    ).toEqual({ height: 48, width: 60 });
  });

  it("rounds YOLOS's sides down to multiples of 16, portrait first", () => {
    const yolos = {
      kind: 'shortestLongest',
      shortestEdge: 48,
      longestEdge: 64,
      yolos: true,
    } as const;
    expect(targetSize(70, 30, yolos)).toEqual({ height: 64, width: 16 });
    expect(targetSize(60, 48, yolos)).toEqual({ height: 48, width: 48 });
  });

  it("rounds GLPN's sides down to the divisor, and DPT's to the nearest multiple", () => {
    expect(targetSize(40, 100, { kind: 'divisor', divisor: 32 })).toEqual({
      height: 32,
      width: 96,
    });
    expect(targetSize(20, 24, { kind: 'divisor', divisor: 32 })).toEqual({ height: 0, width: 0 });
    const exact = { kind: 'exact', height: 32, width: 32 } as const;
    // 40x48: the height needs less change (0.8 vs 0.667): 32 x 38.4 -> multiples of 8: 32 x 40.
    expect(targetSize(40, 48, exact, { keepAspectRatio: true, multiple: 8 })).toEqual({
      height: 32,
      width: 40,
    });
    expect(targetSize(40, 48, exact, { keepAspectRatio: false, multiple: 8 })).toEqual({
      height: 32,
      width: 32,
    });
  });
});
