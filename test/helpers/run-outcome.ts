// Counts a vitest run from its task states and errors, for the summary line and the parity JSON.
// vitest fails a run when any module is not ok (a failed test, a failed beforeAll/afterAll hook,
// a file that did not load) or an error escaped the tests; every one of those must show up in
// `failed`, or the summary could read "0 failed" on a run that exits 1.
import type { TestCase, TestModule, TestRunEndReason, TestSuite } from 'vitest/node';
import type { SerializedError } from 'vitest';

export interface RunOutcome {
  passed: number;
  /** Failed tests + failed hooks and files (their own errors) + unhandled errors. */
  failed: number;
  /** Tests that did not run: skip/todo/skipIf, or not reached because a hook or file failed. */
  skipped: number;
  /** One line per failure, for the reader of a log. */
  failures: string[];
}

function where(entity: TestModule | TestSuite): string {
  return entity.type === 'module'
    ? entity.relativeModuleId
    : `${entity.module.relativeModuleId} > ${entity.fullName}`;
}

export function countTest(test: TestCase, outcome: RunOutcome): void {
  const state = test.result().state;
  if (state === 'passed') outcome.passed += 1;
  else if (state === 'failed') {
    outcome.failed += 1;
    outcome.failures.push(`test ${test.module.relativeModuleId} > ${test.fullName}`);
  }
  // 'skipped' and 'pending' (never reached: the run was cut short or a hook failed first).
  else outcome.skipped += 1;
}

/** Adds one module: its tests, and every hook or load error of the module and its suites. */
export function countModule(
  testModule: TestModule,
  outcome: RunOutcome,
  countTests: (test: TestCase) => void = (test) => countTest(test, outcome),
): void {
  const failedBefore = outcome.failed;
  for (const test of testModule.children.allTests()) countTests(test);
  // A suite's or module's own errors are its hooks' (beforeAll/afterAll) or, for a module,
  // the errors of loading and collecting the file; a failing test is not one of them.
  for (const entity of [testModule, ...testModule.children.allSuites()]) {
    const errors = entity.errors();
    if (errors.length === 0) continue;
    outcome.failed += 1;
    outcome.failures.push(
      `${entity.type === 'module' ? 'file' : 'suite'} ${where(entity)}: ${errors[0]?.message ?? 'failed'}`,
    );
  }
  // vitest fails the run on any module that is not ok; if nothing above said why, say it anyway.
  if (!testModule.ok() && outcome.failed === failedBefore) {
    outcome.failed += 1;
    outcome.failures.push(`file ${testModule.relativeModuleId}: failed`);
  }
}

export function emptyOutcome(): RunOutcome {
  return { passed: 0, failed: 0, skipped: 0, failures: [] };
}

/** Adds what failed the run outside any module: unhandled errors, and a run vitest failed anyway. */
export function countRun(
  outcome: RunOutcome,
  unhandledErrors: readonly SerializedError[],
  reason: TestRunEndReason | undefined,
): void {
  for (const error of unhandledErrors) {
    outcome.failed += 1;
    outcome.failures.push(`unhandled error: ${error.message}`);
  }
  // e.g. no test files matched, or the run was interrupted: vitest exits 1 with nothing failed.
  if (reason !== undefined && reason !== 'passed' && outcome.failed === 0) {
    outcome.failed += 1;
    outcome.failures.push(`run ${reason} with no failing test`);
  }
}

export function countOutcome(
  testModules: readonly TestModule[],
  unhandledErrors: readonly SerializedError[],
  reason?: TestRunEndReason,
): RunOutcome {
  const outcome = emptyOutcome();
  for (const testModule of testModules) countModule(testModule, outcome);
  countRun(outcome, unhandledErrors, reason);
  return outcome;
}
