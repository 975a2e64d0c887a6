// After a parity project ran, prints one JSON line for it:
// {"parity":{"binding":"native","pipelines":P,"tasks":N,"aliases":{alias:task},"golden_cases":G,
//   "golden_tests":GT,"golden_reruns":R,"tokenizers":K,"tokenizer_cases":T,"behaviour_cases":B,
//   "without_golden":[...],"failed":F,"skipped":S,"maxAbsDiff":{pipeline:deviation}}}
// Each count is of distinct things, so that the line cannot read larger than what was proven
// (docs/testing.md#the-counts): P counts pipelines by implementation (an alias, textToAudio for
// textToSpeech, counts with its task and is listed under aliases; N counts task names, aliases
// included, with a golden case), G distinct Python references
// (two tests comparing with the same reference are one; GT counts the tests), K distinct
// tokenizers and T distinct tokenizer goldens. What a test checks comes from its meta
// (parity-meta.ts). When the whole parity project ran, a pipeline of the registry with no golden
// case that ran is a failure: it is named in without_golden, counted in F, and fails the run.
// F otherwise counts as the summary line does (test/helpers/run-outcome.ts). The suite runs
// twice, once per ONNX Runtime binding (vitest.config.ts): a line each.
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';
import type { SerializedError } from 'vitest';
import type {} from './parity-meta.ts';
import { countModule, countRun, countTest, emptyOutcome } from './run-outcome.ts';
import {
  implementationOf,
  PARITY_PROJECTS,
  REGISTRY,
  withoutGolden,
  type PipelineRegistry,
} from './golden-coverage.ts';

export { PARITY_PROJECTS, type PipelineRegistry } from './golden-coverage.ts';

export interface ParityLine {
  binding: string;
  pipelines: number;
  tasks: number;
  aliases: Record<string, string>;
  golden_cases: number;
  golden_tests: number;
  golden_reruns: number;
  tokenizers: number;
  tokenizer_cases: number;
  behaviour_cases: number;
  without_golden: string[];
  failed: number;
  skipped: number;
  maxAbsDiff: Record<string, number>;
}

export function parityLine(
  testModules: readonly TestModule[],
  unhandledErrors: readonly SerializedError[],
  reason?: TestRunEndReason,
  project = 'parity',
  registry: PipelineRegistry = REGISTRY,
): ParityLine | undefined {
  const parity = testModules.filter((m) => m.project.name === project);
  if (parity.length === 0) return undefined;
  const proven = new Set<string>();
  const provenTasks = new Set<string>();
  const maxAbsDiff: Record<string, number> = {};
  const golden = new Set<string>();
  const tokenizerCases = new Set<string>();
  const tokenizers = new Set<string>();
  const tests = { golden: 0, rerun: 0, behaviour: 0 };
  const outcome = emptyOutcome();
  for (const testModule of parity) {
    countModule(testModule, outcome, (test) => {
      countTest(test, outcome);
      const state = test.result().state;
      if (state !== 'passed' && state !== 'failed') return;
      const meta = test.meta();
      const { parity: kind = 'behaviour', pipeline, maxAbsDiff: diff } = meta;
      // A test with no reference of its own kind is its own reference.
      const reference = meta.reference ?? `${testModule.relativeModuleId} > ${test.fullName}`;
      if (kind === 'tokenizer') {
        tokenizerCases.add(reference);
        tokenizers.add(meta.tokenizer ?? testModule.relativeModuleId);
      } else tests[kind] += 1;
      if (kind === 'golden') golden.add(reference);
      if (pipeline === undefined) return;
      if (kind === 'golden') {
        proven.add(implementationOf(registry, pipeline));
        provenTasks.add(pipeline);
      }
      if (diff !== undefined) maxAbsDiff[pipeline] = Math.max(maxAbsDiff[pipeline] ?? 0, diff);
    });
  }
  const missing = withoutGolden(testModules, project, registry);
  for (const implementation of missing)
    outcome.failures.push(`pipeline ${implementation}: no golden case ran`);
  outcome.failed += missing.length;
  // Errors outside any module cannot be told apart by project; they fail this run all the same.
  // The run's own verdict applies only when nothing but parity ran.
  countRun(outcome, unhandledErrors, parity.length === testModules.length ? reason : undefined);
  return {
    binding: PARITY_PROJECTS[project] ?? project,
    pipelines: proven.size,
    tasks: provenTasks.size,
    aliases: Object.fromEntries(
      Object.entries(registry.aliases).filter(([alias]) => registry.tasks.includes(alias)),
    ),
    golden_cases: golden.size,
    golden_tests: tests.golden,
    golden_reruns: tests.rerun,
    tokenizers: tokenizers.size,
    tokenizer_cases: tokenizerCases.size,
    behaviour_cases: tests.behaviour,
    without_golden: missing,
    failed: outcome.failed,
    skipped: outcome.skipped,
    maxAbsDiff,
  };
}

export default class ParityReporter implements Reporter {
  private readonly write: (text: string) => void;
  private readonly registry: PipelineRegistry;

  /** vitest passes the reporter's options object; tests pass `write` and a registry of their own. */
  constructor(options: { write?: (text: string) => void; registry?: PipelineRegistry } = {}) {
    this.write = options.write ?? ((text) => process.stdout.write(text));
    this.registry = options.registry ?? REGISTRY;
  }

  onTestRunEnd(
    testModules: readonly TestModule[],
    unhandledErrors: readonly SerializedError[],
    reason?: TestRunEndReason,
  ): void {
    for (const project of Object.keys(PARITY_PROJECTS)) {
      const line = parityLine(testModules, unhandledErrors, reason, project, this.registry);
      if (line === undefined) continue;
      this.write(`${JSON.stringify({ parity: line })}\n`);
      // vitest has set its exit code before reporters run; a missing golden fails the run too.
      if (line.without_golden.length > 0) {
        this.write(`failed: pipelines with no golden case: ${line.without_golden.join(', ')}\n`);
        process.exitCode = 1;
      }
    }
  }
}
