// Exactly-once with embedding-sized outputs (~8 KB each) on a broker with the default 1 MiB
// message.max.bytes: a partition's transaction of up to transactionMaxRecords records would
// exceed it, be refused, aborted and retried forever. Transactions are bounded by bytes too, so
// every record commits, once.
import { describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const PARTITIONS = 2;
const RECORDS = 1500;
const PAD = 'x'.repeat(8000);

async function sum(offsets: Promise<Map<number, string>>): Promise<number> {
  let total = 0;
  for (const offset of (await offsets).values()) total += Math.max(0, Number(offset));
  return total;
}

describe('Kafka exactly-once, embedding-sized outputs', () => {
  it('commits every record once with ~8 KB outputs', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 2 },
    ]);
    // The merged output carries the 8 KB field: the size of a 384-float embedding as JSON.
    const messages = corpusRecords(RECORDS).map((r, i) => ({
      partition: i % PARTITIONS,
      key: r.id,
      value: JSON.stringify({ ...r, pad: PAD }),
    }));
    // In sends under the broker's 1 MiB limit.
    for (let i = 0; i < messages.length; i += 100)
      await kit.produce(input, messages.slice(i, i + 100));
    const config = kafkaRouteConfig({
      brokers: kit.brokers,
      input,
      output,
      groupId,
      mode: 'exactly-once',
    });
    // The default commit interval: a partition's transaction gathers a second of outputs.
    const worker = startWorkerProcess({
      ...config,
      delivery: { mode: 'exactly-once', commitIntervalMs: 1000 },
    });
    try {
      await waitForProgress(() => sum(kit.committedOffsets(groupId, input)), {
        what: 'the exactly-once worker to commit the whole input',
        done: (n) => n >= RECORDS,
        stallMs: 60_000,
        firstProgressMs: 120_000,
        abort: worker.gone,
        context: () => worker.output().slice(-3000),
      });
      const outputs = await kit.readAll(output, {
        count: RECORDS,
        readCommitted: true,
        quietMs: 2000,
        stallMs: 120_000,
      });
      const ids = outputs.map((o) => (JSON.parse(o.value.toString('utf8')) as { id: string }).id);
      expect(new Set(ids).size).toBe(RECORDS);
      expect(ids.length).toBe(RECORDS);
      expect(outputs.every((o) => o.value.length > 8000)).toBe(true);
      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.output().slice(-3000)).toBe(0);
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        worker.child.kill('SIGKILL');
    }
  });
});
