import { defineConfig } from 'vitest/config';

// Tests wait on progress (test/helpers/progress.ts): a wait fails when its measure stops moving for
// a stall bound, so a loaded 2-core machine only makes a run slower. vitest's own timeouts bound
// the total and so stay far above any honest run; they are a last resort against a hang that no
// progress wait covers (a promise that never settles), not a speed check.
const HANG_GUARD_MS = 30 * 60_000;

// The Kafka files that prove delivery run a second time on kafkajs (the first run uses
// connections.kafka.client's default, platformatic, in both delivery modes): delivery
// at-least-once / exactly-once with kill -9 and two workers, DLQ, SIGTERM drain, aborted inputs,
// generation routes, compression. The other Kafka
// files (broker restart, poison pills, large outputs, secured services) run once, to keep CI
// within its time.
const OTHER_KAFKA_CLIENT = 'kafkajs';
const KAFKA_MATRIX = [
  'test/integration/kafka-delivery.test.ts',
  'test/integration/kafka-dlq.test.ts',
  'test/integration/kafka-sigterm-drain.test.ts',
  'test/integration/kafka-exactly-once-aborted-inputs.test.ts',
  'test/integration/kafka-generation.test.ts',
  'test/integration/kafka-source-sink.test.ts',
  'test/integration/kafka-compression.test.ts',
  'test/integration/kafka-partitions-added.test.ts',
];

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
          env: { HUGOT_ORT_BINDING: 'native' },
          testTimeout: HANG_GUARD_MS,
        },
      },
      // The same goldens and tolerances again on onnxruntime-node's binding: both bindings of the
      // runtime interface must keep Python's numbers (docs/runtime.md).
      {
        test: {
          name: 'parity-onnxruntime-node',
          include: ['test/parity/**/*.test.ts'],
          env: { HUGOT_ORT_BINDING: 'onnxruntime-node' },
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
      {
        test: {
          name: `integration-${OTHER_KAFKA_CLIENT}`,
          include: KAFKA_MATRIX,
          globalSetup: ['test/integration/global-setup.ts'],
          setupFiles: ['test/integration/kafkajs-filter-first.ts'],
          env: { HUGOT_KAFKA_CLIENT: OTHER_KAFKA_CLIENT },
          testTimeout: HANG_GUARD_MS,
          hookTimeout: HANG_GUARD_MS,
          fileParallelism: false,
          // After the first integration run, not beside it: both start brokers and ONNX workers.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
