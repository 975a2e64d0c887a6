import { describe, expect, it } from 'vitest';
import { seededRandom } from '../../../src/pipelines/runtime/random.ts';
import { chooseToken, type SamplingSettings } from '../../../src/pipelines/generation/sampling.ts';
import { StopSequences } from '../../../src/pipelines/generation/stop-sequences.ts';

const sample: SamplingSettings = {
  doSample: true,
  temperature: 1,
  topK: 0,
  topP: 1,
  repetitionPenalty: 1,
};

function counts(logits: number[], settings: SamplingSettings, draws = 2000): number[] {
  const random = seededRandom(11);
  const out = logits.map(() => 0);
  for (let i = 0; i < draws; i += 1) {
    const id = chooseToken(Float32Array.from(logits), [], settings, random);
    out[id] = (out[id] ?? 0) + 1;
  }
  return out;
}

describe('seededRandom', () => {
  it('repeats for a seed and stays in [0, 1)', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const xs = Array.from({ length: 1000 }, () => a());
    expect(Array.from({ length: 1000 }, () => b())).toEqual(xs);
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    expect(Math.abs(xs.reduce((s, x) => s + x, 0) / xs.length - 0.5)).toBeLessThan(0.05);
    expect(seededRandom(43)()).not.toBe(xs[0]);
  });
});

describe('chooseToken', () => {
  it('greedy takes the first maximum, as torch.argmax', () => {
    const greedy = { ...sample, doSample: false };
    expect(chooseToken(Float32Array.from([1, 3, 3, 2]), [], greedy, () => 0)).toBe(1);
  });

  it('applies the repetition penalty on both signs, as Python', () => {
    const greedy = { ...sample, doSample: false, repetitionPenalty: 2 };
    // 4 / 2 = 2 < 3, so the repeated token loses to the next best.
    expect(chooseToken(Float32Array.from([4, 3, -1]), [0, 0], greedy, () => 0)).toBe(1);
    // -1 * 2 = -2 < -1.5
    expect(chooseToken(Float32Array.from([-1, -1.5]), [0], greedy, () => 0)).toBe(1);
  });

  it('samples in proportion to the softmax, and only within top-k / top-p', () => {
    const logits = [Math.log(0.5), Math.log(0.3), Math.log(0.15), Math.log(0.05)];
    const all = counts(logits, sample);
    expect(all[0]! / 2000).toBeCloseTo(0.5, 1);
    expect(all[3]).toBeGreaterThan(0);
    expect(counts(logits, { ...sample, topK: 2 }).slice(2)).toEqual([0, 0]);
    // Cumulative from the least likely: 0.05, 0.2 <= 1 - 0.75 go; 0.5 > 0.25 stays.
    expect(counts(logits, { ...sample, topP: 0.75 }).slice(2)).toEqual([0, 0]);
    expect(counts(logits, { ...sample, topP: 0.2 })).toEqual([2000, 0, 0, 0]);
  });
});

describe('StopSequences', () => {
  const stops = new StopSequences(['</end>', 'STOP']);

  it('finds the earliest stop sequence', () => {
    expect(stops.find('a STOP b </end>')).toEqual({ index: 2, stop: 'STOP' });
    expect(stops.find('nothing')).toBeUndefined();
  });

  it('holds back a tail that may still become a stop sequence or a character', () => {
    expect(stops.settledLength('hello </en')).toBe(6);
    expect(stops.settledLength('hello ST')).toBe(6);
    expect(stops.settledLength('hello')).toBe(5);
    expect(stops.settledLength('caf\uFFFD')).toBe(3);
  });
});
