// Runs one golden case as a vitest test and records its largest deviation for the parity report.
// The meta options below (test/helpers/parity-meta.ts) tell the parity report what each test
// checks, so that its counts say what was proven; a test without them is a behaviour case.
import { expect, it, type TestOptions } from 'vitest';
import { compareDeep } from './compare.ts';
import type { GoldenCase } from './goldens.ts';
import { referenceOf } from './reference.ts';
import type {} from '../helpers/parity-meta.ts';

/** Options for a pipeline's top-level describe: its tests count towards that pipeline. */
export const forPipeline = (pipeline: string): TestOptions => ({ meta: { pipeline } });
/** Options for a test (or describe) that compares with a Python reference output. */
export const GOLDEN: TestOptions = { meta: { parity: 'golden' } };
/** Options for a test that repeats a golden another test checks (in a batch, interleaved). */
export const RERUN: TestOptions = { meta: { parity: 'rerun' } };

/**
 * Options for a tokenizer golden: `tokenizer` names the tokenizer (its file's content), `golden`
 * the case, so that models sharing one tokenizer and its goldens count once.
 */
export const tokenizerCase = (tokenizer: string, golden: unknown): TestOptions => ({
  meta: { parity: 'tokenizer', tokenizer, reference: referenceOf(tokenizer, golden) },
});

export interface ParityOptions {
  tolerance?: number;
  /** Adjusts Python's output where it is knowingly batch-dependent (documented at the call). */
  expected?: (golden: GoldenCase, actual: unknown) => unknown;
  /** The golden is checked by another test already; this one runs it again (e.g. in a batch). */
  rerun?: boolean;
}

export function parityCase(
  golden: GoldenCase,
  actual: (golden: GoldenCase) => Promise<unknown>,
  options: ParityOptions = {},
): void {
  // The reference is the Python call and output, not the case's name or task: the same golden
  // fed to an alias or a second export of the same weights is one reference.
  const reference = referenceOf(golden.call, golden.output);
  it(
    `${golden.name} (${golden.task})`,
    { meta: { parity: options.rerun === true ? 'rerun' : 'golden', reference } },
    async ({ task }) => {
      const result = await actual(golden);
      const expected =
        options.expected === undefined ? golden.output : options.expected(golden, result);
      const comparison = compareDeep(result, expected, options.tolerance ?? 1e-4);
      task.meta.maxAbsDiff = comparison.maxAbsDiff;
      expect(comparison.differences, `${golden.name} differs from Python`).toEqual([]);
    },
  );
}

/** Python returns a bare result for a single input and a list for a list; we always batch. */
export function asBatch(inputs: unknown): unknown[] {
  return Array.isArray(inputs) ? inputs : [inputs];
}

export function unbatch<T>(inputs: unknown, outputs: T[]): T | T[] {
  return Array.isArray(inputs) ? outputs : (outputs[0] as T);
}
