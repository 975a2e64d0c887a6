// After the parity project ran, prints one JSON line:
// {"parity":{"pipelines":N,"cases":M,"failed":F,"skipped":S,"maxAbsDiff":{pipeline:deviation}}}
// A pipeline is the top-level describe block of a parity test file ('tokenizer' is not one).
import type { Reporter, TestModule } from 'vitest/node';

export default class ParityReporter implements Reporter {
  onTestRunEnd(testModules: readonly TestModule[]): void {
    const parity = testModules.filter((m) => m.project.name === 'parity');
    if (parity.length === 0) return;
    const pipelines = new Set<string>();
    const maxAbsDiff: Record<string, number> = {};
    let cases = 0;
    let failed = 0;
    let skipped = 0;
    for (const testModule of parity) {
      if (testModule.state() === 'failed' && testModule.children.size === 0) failed += 1;
      for (const test of testModule.children.allTests()) {
        let suite = test.parent;
        while (suite.type === 'suite' && suite.parent.type === 'suite') suite = suite.parent;
        const pipeline = suite.type === 'suite' ? suite.name : testModule.moduleId;
        // Tokenizer cases count as cases; the tokenizer is not a pipeline.
        if (pipeline !== 'tokenizer') pipelines.add(pipeline);
        const state = test.result().state;
        // A skipped case is reported as skipped, never counted as a passing one.
        if (state === 'skipped' || state === 'pending') {
          skipped += 1;
          continue;
        }
        cases += 1;
        if (state !== 'passed') failed += 1;
        const diff = test.meta().maxAbsDiff;
        if (diff !== undefined) maxAbsDiff[pipeline] = Math.max(maxAbsDiff[pipeline] ?? 0, diff);
      }
    }
    process.stdout.write(
      `${JSON.stringify({ parity: { pipelines: pipelines.size, cases, failed, skipped, maxAbsDiff } })}\n`,
    );
  }
}
