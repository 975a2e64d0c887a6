// Ends the run with one plain line, `N passed, N failed, N skipped`, which CI reads whatever the
// runner; vitest's own summary has a layout of its own. The counts come from run-outcome.ts:
// `failed` is above 0 whenever vitest fails the run (exit code 1), hooks and files included.
import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';
import type { SerializedError } from 'vitest';
import { countOutcome } from './run-outcome.ts';

export default class SummaryReporter implements Reporter {
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
    const { passed, failed, skipped, failures } = countOutcome(
      testModules,
      unhandledErrors,
      reason,
    );
    // Hook and file failures are easy to miss in vitest's output: name every failure once.
    const detail = failures.map((failure) => `  failed: ${failure}\n`).join('');
    this.write(`\n${detail}${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
