// An exactly-once route reads its input with read_committed: records of aborted transactions must
// never be processed (a route reading another exactly-once route's output would otherwise turn
// aborted records into committed outputs). kafkajs' own filter let some through: the broker lists
// aborted transactions in the order they ended, and a transaction that started before the first
// one listed was read as committed (src/connectors/kafka/kafkajs-read-committed.ts). The input
// here has exactly that shape.
import '../../src/connectors/kafka/kafkajs-read-committed.ts';
import { describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

/**
 * One partition: A opens at 0, B at 1, B aborts, A writes again and aborts, then `committed`
 * plain records. Returns the offset after the last plain record (abort markers are written
 * asynchronously and may come after it).
 */
async function interleavedAbortedInput(topic: string, committed: number): Promise<number> {
  const records = corpusRecords(committed + 3).map((r) => ({
    key: r.id,
    value: JSON.stringify(r),
    partition: 0,
  }));
  const open = async (name: string) => {
    const producer = kit.kafka.producer({
      transactionalId: uniqueName(name),
      idempotent: true,
      maxInFlightRequests: 1,
    });
    await producer.connect();
    return { producer, txn: await producer.transaction() };
  };
  const a = await open('txn-a');
  const b = await open('txn-b');
  try {
    await a.txn.send({ topic, acks: -1, messages: [records[0]!] });
    await b.txn.send({ topic, acks: -1, messages: [records[1]!] });
    await b.txn.abort();
    await a.txn.send({ topic, acks: -1, messages: [records[2]!] });
    await a.txn.abort();
  } finally {
    await Promise.all([a.producer.disconnect(), b.producer.disconnect()]);
  }
  const plain = kit.kafka.producer();
  await plain.connect();
  try {
    const [sent] = await plain.send({ topic, acks: -1, messages: records.slice(3) });
    return Number(sent?.baseOffset ?? Number.NaN) + committed;
  } finally {
    await plain.disconnect();
  }
}

describe('Kafka exactly-once, aborted input transactions', () => {
  it('processes only committed input records', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    const COMMITTED = 4;
    await kit.createTopics([
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
    ]);
    const end = await interleavedAbortedInput(input, COMMITTED);
    const worker = startWorkerProcess(
      kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId, mode: 'exactly-once' }),
    );
    try {
      await waitForProgress(
        async () => Number((await kit.committedOffsets(groupId, input)).get(0) ?? -1),
        {
          what: 'the exactly-once worker to commit the whole input',
          done: (offset) => offset >= end,
          stallMs: 60_000,
          firstProgressMs: 120_000,
          abort: worker.gone,
          context: () => worker.output().slice(-3000),
        },
      );
      const outputs = await kit.readAll(output, { readCommitted: true, quietMs: 2000 });
      const ids = outputs.map((o) => (JSON.parse(o.value.toString('utf8')) as { id: string }).id);
      expect(ids.sort()).toEqual(['r3', 'r4', 'r5', 'r6']);
      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.output().slice(-3000)).toBe(0);
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        worker.child.kill('SIGKILL');
    }
  });
});
