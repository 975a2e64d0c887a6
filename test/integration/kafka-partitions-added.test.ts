// Partitions added to an input topic while the worker runs (2 → 4): the records produced to the
// new partitions are read within the partition-discovery interval, and the growth is logged.
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import type { Logger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

describe.each(['at-least-once', 'exactly-once'] as const)(
  'partitions added at run time, %s',
  (mode) => {
    it('reads the new partitions without a restart and logs the growth', async () => {
      const input = uniqueName('grow-in');
      const output = uniqueName('grow-out');
      const groupId = uniqueName('grow-group');
      await kit.createTopics([
        { topic: input, partitions: 2 },
        { topic: output, partitions: 1 },
      ]);
      const records = corpusRecords(80);
      const before = records.slice(0, 40);
      const after = records.slice(40);
      await kit.produce(
        input,
        before.map((r, i) => ({ partition: i % 2, key: r.id, value: JSON.stringify(r) })),
      );
      const lines: string[] = [];
      const push = (_: object, message: string): void => void lines.push(message);
      const logger: Logger = { debug: () => undefined, info: push, warn: push, error: push };
      const config = configSchema.parse(
        kafkaRouteConfig({
          brokers: kit.brokers,
          input,
          output,
          groupId,
          mode,
          source: { partitionDiscoveryMs: 1_000 },
        }),
      );
      const worker = await StreamWorker.start(config, { logger });
      try {
        const readCommitted = mode === 'exactly-once';
        await kit.readAll(output, { count: before.length, readCommitted, quietMs: 200 });
        await kit.addPartitions(input, 4);
        // Only to the new partitions: without discovery, nothing would ever read them.
        await kit.produce(
          input,
          after.map((r, i) => ({ partition: 2 + (i % 2), key: r.id, value: JSON.stringify(r) })),
        );
        const outputs = await kit.readAll(output, {
          count: records.length,
          readCommitted,
          quietMs: 500,
        });
        expect(new Set(outputs.map((o) => o.key))).toEqual(new Set(records.map((r) => r.id)));
        expect(lines).toContain(
          `topic ${input} grew from 2 to 4 partitions: joining the group again so that the new ones are read`,
        );
      } finally {
        await worker.stop(20_000);
      }
      const committed = await kit.committedOffsets(groupId, input);
      const ends = await kit.endOffsets(input);
      for (const partition of [2, 3]) expect(committed.get(partition)).toBe(ends.get(partition));
    });
  },
);
