import { defineConfig } from 'vitest/config';

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
        },
      },
      {
        test: {
          name: 'parity',
          include: ['test/parity/**/*.test.ts'],
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/integration/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
          // Two cores: brokers, Redis and ONNX workers already compete for them.
          fileParallelism: false,
        },
      },
    ],
  },
});
