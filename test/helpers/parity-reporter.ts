// After a parity project ran, prints one JSON line for it:
// {"parity":{"binding":"native","pipelines":P,"golden_cases":G,"golden_reruns":R,"tokenizer_cases":T,
//   "behaviour_cases":B,"failed":F,"skipped":S,"maxAbsDiff":{pipeline:deviation}}}
// What a test checks comes from its meta (parity-meta.ts): P counts the pipelines
// (tasks) with at least one case that ran; the tokenizer and the generative engine loop are not
// pipelines. G/R/T/B count the cases that ran (passed or failed), S those that did not. F counts
// as the summary line does (test/helpers/run-outcome.ts): failed tests, hooks and files. The suite
// runs twice, once per ONNX Runtime binding (vitest.config.ts): a line each.
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';
import type { SerializedError } from 'vitest';
import type {} from './parity-meta.ts';
import { countModule, countRun, countTest, emptyOutcome } from './run-outcome.ts';

/** The parity projects of vitest.config.ts and the binding each runs on. */
export const PARITY_PROJECTS: Readonly<Record<string, string>> = {
  parity: 'native',
  'parity-onnxruntime-node': 'onnxruntime-node',
};

export interface ParityLine {
  binding: string;
  pipelines: number;
  golden_cases: number;
  golden_reruns: number;
  tokenizer_cases: number;
  behaviour_cases: number;
  failed: number;
  skipped: number;
  maxAbsDiff: Record<string, number>;
}

export function parityLine(
  testModules: readonly TestModule[],
  unhandledErrors: readonly SerializedError[],
  reason?: TestRunEndReason,
  project = 'parity',
): ParityLine | undefined {
  const parity = testModules.filter((m) => m.project.name === project);
  if (parity.length === 0) return undefined;
  const pipelines = new Set<string>();
  const maxAbsDiff: Record<string, number> = {};
  const kinds = { golden: 0, rerun: 0, tokenizer: 0, behaviour: 0 };
  const outcome = emptyOutcome();
  for (const testModule of parity) {
    countModule(testModule, outcome, (test) => {
      countTest(test, outcome);
      const state = test.result().state;
      if (state !== 'passed' && state !== 'failed') return;
      const { parity: kind = 'behaviour', pipeline, maxAbsDiff: diff } = test.meta();
      kinds[kind] += 1;
      if (pipeline === undefined) return;
      pipelines.add(pipeline);
      if (diff !== undefined) maxAbsDiff[pipeline] = Math.max(maxAbsDiff[pipeline] ?? 0, diff);
    });
  }
  // Errors outside any module cannot be told apart by project; they fail this run all the same.
  // The run's own verdict applies only when nothing but parity ran.
  countRun(outcome, unhandledErrors, parity.length === testModules.length ? reason : undefined);
  return {
    binding: PARITY_PROJECTS[project] ?? project,
    pipelines: pipelines.size,
    golden_cases: kinds.golden,
    golden_reruns: kinds.rerun,
    tokenizer_cases: kinds.tokenizer,
    behaviour_cases: kinds.behaviour,
    failed: outcome.failed,
    skipped: outcome.skipped,
    maxAbsDiff,
  };
}

export default class ParityReporter implements Reporter {
  private readonly write: (text: string) => void;

  /** vitest passes the reporter's options object; tests pass `write` to capture the output. */
  constructor(options: { write?: (text: string) => void } = {}) {
    this.write = options.write ?? ((text) => process.stdout.write(text));
  }

  onTestRunEnd(
    testModules: readonly TestModule[],
    unhandledErrors: readonly SerializedError[],
    reason?: TestRunEndReason,
  ): void {
    for (const project of Object.keys(PARITY_PROJECTS)) {
      const line = parityLine(testModules, unhandledErrors, reason, project);
      if (line !== undefined) this.write(`${JSON.stringify({ parity: line })}\n`);
    }
  }
}
