// Runs one golden case as a vitest test and records its largest deviation for the parity report.
import { expect, it } from 'vitest';
import { compareDeep } from './compare.ts';
import type { GoldenCase } from './goldens.ts';

declare module 'vitest' {
  interface TaskMeta {
    maxAbsDiff?: number;
  }
}

export interface ParityOptions {
  tolerance?: number;
  /** Adjusts Python's output where it is knowingly batch-dependent (documented at the call). */
  expected?: (golden: GoldenCase, actual: unknown) => unknown;
}

export function parityCase(
  golden: GoldenCase,
  actual: (golden: GoldenCase) => Promise<unknown>,
  options: ParityOptions = {},
): void {
  it(`${golden.name} (${golden.task})`, async ({ task }) => {
    const result = await actual(golden);
    const expected =
      options.expected === undefined ? golden.output : options.expected(golden, result);
    const comparison = compareDeep(result, expected, options.tolerance ?? 1e-4);
    task.meta.maxAbsDiff = comparison.maxAbsDiff;
    expect(comparison.differences, `${golden.name} differs from Python`).toEqual([]);
  });
}

/** Python returns a bare result for a single input and a list for a list; we always batch. */
export function asBatch(inputs: unknown): unknown[] {
  return Array.isArray(inputs) ? inputs : [inputs];
}

export function unbatch<T>(inputs: unknown, outputs: T[]): T | T[] {
  return Array.isArray(inputs) ? outputs : (outputs[0] as T);
}
