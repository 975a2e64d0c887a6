import { afterEach, describe, expect, inject, it } from 'vitest';
import { Kafka, logLevel, type Consumer, type Producer } from 'kafkajs';
import { waitForProgress } from '../helpers/progress.ts';
import { uniqueName } from '../helpers/unique-name.ts';

const kafka = new Kafka({
  clientId: 'hugot-stream-test',
  brokers: inject('kafkaBrokers').split(','),
  logLevel: logLevel.NOTHING,
});

const toClose: (Consumer | Producer)[] = [];
afterEach(async () => {
  await Promise.all(toClose.splice(0).map((c) => c.disconnect()));
});

async function produce(topic: string, from: number, count: number): Promise<void> {
  const producer = kafka.producer();
  toClose.push(producer);
  await producer.connect();
  await producer.send({
    topic,
    messages: Array.from({ length: count }, (_, i) => ({
      key: `k${from + i}`,
      value: JSON.stringify({ id: from + i }),
    })),
  });
}

/** Consumes until `count` records arrived, committing each record's next offset by hand. */
async function consumeAndCommit(topic: string, groupId: string, count: number): Promise<number[]> {
  const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 1_000 });
  toClose.push(consumer);
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const ids: number[] = [];
  let failure: Error | undefined;
  consumer
    .run({
      autoCommit: false,
      eachMessage: async ({ topic: t, partition, message }) => {
        // A record counts once its commit went through: a commit refused during a rebalance (more
        // likely on a loaded machine) makes kafkajs deliver the record again.
        await consumer.commitOffsets([
          { topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() },
        ]);
        ids.push((JSON.parse(message.value?.toString() ?? 'null') as { id: number }).id);
      },
    })
    .catch((error: unknown) => {
      failure = error instanceof Error ? error : new Error(String(error));
    });
  await waitForProgress(() => ids.length, {
    what: `${count} records consumed and committed from ${topic}`,
    done: (n) => n >= count,
    abort: () => (failure === undefined ? undefined : `the consumer failed: ${failure.message}`),
  });
  await consumer.disconnect();
  return ids;
}

describe('Kafka consumer group (real broker)', () => {
  it('consumes every produced record once, commits, and a re-joined member sees only new ones', async () => {
    const topic = uniqueName('smoke');
    const groupId = uniqueName('group');
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 3 }], waitForLeaders: true });

    await produce(topic, 0, 60);
    const first = await consumeAndCommit(topic, groupId, 60);
    expect(first.slice().sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));

    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const total = committed[0]?.partitions.reduce((sum, p) => sum + Number(p.offset), 0);
    expect(total).toBe(60);
    await admin.disconnect();

    // A fresh member of the same group resumes from the committed offsets: it must receive the
    // ten records produced afterwards and none of the sixty it already committed.
    await produce(topic, 60, 10);
    const second = await consumeAndCommit(topic, groupId, 10);
    expect(second.slice().sort((a, b) => a - b)).toEqual(
      Array.from({ length: 10 }, (_, i) => 60 + i),
    );
  });
});
