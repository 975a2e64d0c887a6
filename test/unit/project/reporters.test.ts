// The summary line and the parity JSON line against real vitest runs of small fixture files
// (test/fixtures/reporter-run): a failing beforeAll hook, a file that fails to load, a failing
// afterAll hook, and a clean file. Whenever vitest fails the run, `failed` must be above 0.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createVitest } from 'vitest/node';
import ParityReporter, { type PipelineRegistry } from '../../helpers/parity-reporter.ts';
import SummaryReporter from '../../helpers/summary-reporter.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'reporter-run');

interface Run {
  summary: string;
  parity: unknown;
  /** What vitest decided: 1 when it fails the run. */
  exitCode: number;
}

/** The fixtures' own pipelines: demoAlias is demoPipeline's pipeline under another name. */
const DEMO: PipelineRegistry = {
  tasks: ['demo', 'demoPipeline', 'demoAlias'],
  aliases: { demoAlias: 'demoPipeline' },
};

/** Runs the given fixture files in a vitest of their own, as the project named 'parity'. */
async function run(files: string[], registry: PipelineRegistry = DEMO): Promise<Run> {
  let summary = '';
  let parity = '';
  const previousExitCode = process.exitCode;
  process.exitCode = 0;
  const vitest = await createVitest(
    'test',
    {
      root: FIXTURES,
      config: false,
      name: 'parity',
      include: files.length === 0 ? ['none-such.fixture.ts'] : files,
      watch: false,
      reporters: [
        new SummaryReporter({ write: (text) => (summary += text), registry }),
        new ParityReporter({ write: (text) => (parity += text), registry }),
      ],
      pool: 'threads',
      maxWorkers: 1,
    },
    {},
  );
  try {
    await vitest.start();
  } catch {
    // No test files found: vitest reports the run as failed and throws nothing we need.
  } finally {
    await vitest.close();
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = previousExitCode;
  return {
    summary: summary.trim().split('\n').at(-1) ?? '',
    parity:
      parity === ''
        ? undefined
        : (JSON.parse(parity.split('\n')[0] ?? '') as { parity: unknown }).parity,
    exitCode,
  };
}

describe('summary and parity reporters', () => {
  it('count a failing beforeAll hook and a file that fails to load as failures', async () => {
    const result = await run(['hook-fails.fixture.ts', 'file-fails.fixture.ts'], {
      tasks: ['demo'],
      aliases: {},
    });
    expect(result.exitCode).toBe(1);
    // The hook and the file are the two failures; the hook's tests did not run.
    expect(result.summary).toBe('1 passed, 2 failed, 2 skipped');
    expect(result.parity).toMatchObject({ golden_cases: 1, failed: 2, skipped: 2 });
  });

  it('count a failing afterAll hook although every test passed', async () => {
    const result = await run(['after-fails.fixture.ts'], { tasks: [], aliases: {} });
    expect(result.exitCode).toBe(1);
    expect(result.summary).toBe('1 passed, 1 failed, 2 skipped');
  });

  it('count a run vitest fails with no test at all', async () => {
    const result = await run([]);
    expect(result.exitCode).toBe(1);
    expect(result.summary).toBe('0 passed, 1 failed, 0 skipped');
  });

  it('report each kind of parity case apart on a clean run', async () => {
    const result = await run(['passing.fixture.ts'], { tasks: ['demoPipeline'], aliases: {} });
    expect(result.exitCode).toBe(0);
    expect(result.summary).toBe('4 passed, 0 failed, 1 skipped');
    expect(result.parity).toEqual({
      binding: 'native',
      pipelines: 1,
      tasks: 1,
      aliases: {},
      golden_cases: 1,
      golden_tests: 1,
      golden_reruns: 1,
      tokenizers: 1,
      tokenizer_cases: 1,
      behaviour_cases: 1,
      without_golden: [],
      failed: 0,
      skipped: 1,
      maxAbsDiff: { demoPipeline: 0.25 },
    });
  });

  it('count pipelines by implementation, references and tokenizers once each', async () => {
    const registry = { ...DEMO, tasks: ['demoPipeline', 'demoAlias'] };
    const result = await run(['distinct.fixture.ts'], registry);
    expect(result.exitCode).toBe(0);
    expect(result.parity).toMatchObject({
      pipelines: 1,
      tasks: 2,
      aliases: { demoAlias: 'demoPipeline' },
      golden_cases: 2,
      golden_tests: 4,
      tokenizers: 2,
      tokenizer_cases: 2,
      without_golden: [],
      failed: 0,
    });
  });

  it('fail the run when a pipeline of the registry has no golden case', async () => {
    const result = await run(['distinct.fixture.ts'], {
      ...DEMO,
      tasks: [...DEMO.tasks, 'untested'],
    });
    expect(result.exitCode).toBe(1);
    expect(result.parity).toMatchObject({ without_golden: ['demo', 'untested'], failed: 2 });
    // The plain line CI reads says so too.
    expect(result.summary).toBe('8 passed, 2 failed, 0 skipped');
  });
});
