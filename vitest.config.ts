import { defineConfig } from 'vitest/config';

// Tests wait on progress (test/helpers/progress.ts): a wait fails when its measure stops moving for
// a stall bound, so a loaded 2-core machine only makes a run slower. vitest's own timeouts bound
// the total and so stay far above any honest run; they are a last resort against a hang that no
// progress wait covers (a promise that never settles), not a speed check.
const HANG_GUARD_MS = 30 * 60_000;

export default defineConfig({
  test: {
    reporters: [
      'verbose',
      './test/helpers/summary-reporter.ts',
      './test/helpers/parity-reporter.ts',
    ],
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // Some unit tests start worker threads, the CLI or vitest itself: seconds on a laptop,
          // much more on a loaded 2-core machine.
          testTimeout: HANG_GUARD_MS,
          hookTimeout: HANG_GUARD_MS,
        },
      },
      {
        test: {
          name: 'parity',
          include: ['test/parity/**/*.test.ts'],
          testTimeout: HANG_GUARD_MS,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          setupFiles: ['test/integration/kafkajs-filter-first.ts'],
          testTimeout: HANG_GUARD_MS,
          hookTimeout: HANG_GUARD_MS,
          // Two cores: brokers, Redis and ONNX workers already compete for them.
          fileParallelism: false,
        },
      },
    ],
  },
});
