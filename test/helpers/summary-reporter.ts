// Ends the run with one plain line, `N passed, N failed, N skipped`, which CI reads whatever the
// runner; vitest's own summary has a layout of its own. The counts come from run-outcome.ts:
// `failed` is above 0 whenever vitest fails the run (exit code 1), hooks and files included, and
// so is a parity project that ran whole but left a pipeline without a golden case, which the
// parity reporter fails the run for (golden-coverage.ts).
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';
import type { SerializedError } from 'vitest';
import { countOutcome } from './run-outcome.ts';
import {
  PARITY_PROJECTS,
  REGISTRY,
  withoutGolden,
  type PipelineRegistry,
} from './golden-coverage.ts';

export default class SummaryReporter implements Reporter {
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
    const { passed, skipped, ...outcome } = countOutcome(testModules, unhandledErrors, reason);
    let { failed } = outcome;
    const failures = [...outcome.failures];
    for (const project of Object.keys(PARITY_PROJECTS))
      for (const implementation of withoutGolden(testModules, project, this.registry)) {
        failed += 1;
        failures.push(`pipeline ${implementation} (${project}): no golden case ran`);
      }
    // Hook and file failures are easy to miss in vitest's output: name every failure once.
    const detail = failures.map((failure) => `  failed: ${failure}\n`).join('');
    this.write(`\n${detail}${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
