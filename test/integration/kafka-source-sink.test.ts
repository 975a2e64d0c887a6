// Kafka -> classifier -> Kafka through the stream worker, on a real broker with real text: every
// record once, results equal to the in-process API's, keys and headers kept, order kept per input
// partition, and the group's committed offsets at the end of the input after stop().
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { corpusRecords, referenceResults } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const PARTITIONS = 3;

describe('Kafka source and sink (real broker, real model)', () => {
  it('turns 10,000 records into 10,000 correct outputs, in order per partition, and commits the end', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 2 },
    ]);
    const records = corpusRecords(10_000);
    await kit.produce(
      input,
      records.map((r, i) => ({
        partition: i % PARTITIONS,
        key: `key-${r.id}`,
        value: JSON.stringify(r),
        headers: { trace: `t-${r.id}` },
      })),
    );

    const config = configSchema.parse(
      kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId }),
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const outputs = await kit.readAll(output, { count: records.length, quietMs: 500 });
    await worker.stop(20_000);

    expect(outputs).toHaveLength(records.length);
    const byId = new Map<string, { label: string; result: unknown }>();
    const lastIndexByInputPartition = new Map<string, number>();
    for (const out of outputs) {
      const value = JSON.parse(out.value.toString('utf8')) as {
        id: string;
        label: string;
        result: unknown;
      };
      expect(byId.has(value.id)).toBe(false);
      byId.set(value.id, value);
      expect(out.key).toBe(`key-${value.id}`);
      expect(out.headers['trace']).toBe(`t-${value.id}`);
      // Records of one input partition must keep their order within each output partition.
      const index = Number(value.id.slice(1));
      const lane = `${out.partition}/${index % PARTITIONS}`;
      expect(index).toBeGreaterThan(lastIndexByInputPartition.get(lane) ?? -1);
      lastIndexByInputPartition.set(lane, index);
    }
    expect(byId.size).toBe(records.length);

    // The sample has 50 distinct texts: check each against the in-process API.
    const distinct = records.slice(0, 50);
    const expected = await referenceResults(distinct.map((r) => r.text));
    for (const [i, r] of distinct.entries()) {
      const got = byId.get(r.id)?.result as { label: string; score: number }[];
      const want = expected[i] as { label: string; score: number }[];
      expect(got.map((x) => x.label)).toEqual(want.map((x) => x.label));
      for (const [j, x] of got.entries()) expect(x.score).toBeCloseTo(want[j]?.score ?? NaN, 5);
    }

    const committed = await kit.committedOffsets(groupId, input);
    const ends = await kit.endOffsets(input);
    for (let p = 0; p < PARTITIONS; p += 1) expect(committed.get(p)).toBe(ends.get(p));
    expect(worker.counters()['classify']).toMatchObject({ received: 10_000, written: 10_000 });
  });
});
