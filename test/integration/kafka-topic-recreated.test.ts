// An input topic deleted and created again while the worker runs (an operator resetting it): the
// records produced to the new topic are read without a restart, and the worker stays up. On the
// default client only: kafkajs stalls on a re-created topic (docs/sources-and-sinks.md).
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

describe('input topic deleted and created again', () => {
  it('reads the new topic without a restart', async () => {
    const input = uniqueName('reset-in');
    const output = uniqueName('reset-out');
    const groupId = uniqueName('reset-group');
    await kit.createTopics([
      { topic: input, partitions: 2 },
      { topic: output, partitions: 1 },
    ]);
    const records = corpusRecords(60);
    const [before, after] = [records.slice(0, 30), records.slice(30)];
    await kit.produce(
      input,
      before.map((r, i) => ({ partition: i % 2, key: r.id, value: JSON.stringify(r) })),
    );
    const config = configSchema.parse(
      kafkaRouteConfig({
        brokers: kit.brokers,
        input,
        output,
        groupId,
        source: { partitionDiscoveryMs: 1_000 },
      }),
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    try {
      await kit.readAll(output, { count: before.length, readCommitted: false, quietMs: 200 });
      await kit.withAdmin((admin) => admin.deleteTopics({ topics: [input] }));
      await kit.createTopics([{ topic: input, partitions: 2 }]);
      await kit.produce(
        input,
        after.map((r, i) => ({ partition: i % 2, key: r.id, value: JSON.stringify(r) })),
      );
      const outputs = await kit.readAll(output, {
        count: records.length,
        readCommitted: false,
        quietMs: 500,
        stallMs: 120_000,
      });
      expect(new Set(outputs.map((o) => o.key))).toEqual(new Set(records.map((r) => r.id)));
    } finally {
      await worker.stop(20_000);
    }
  });
});
