// The Kafka source through its driver seam, with a fake driver the test steers by hand: it
// delivers batches, rebalances (with or without revocation), refuses commits, aborts
// transactions. Offsets must be committed only after the contiguous prefix of records was
// written, never for a partition no longer assigned; a revocation retires only its partitions.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../../../src/config/schema.ts';
import type {
  DriverFeatures,
  GroupMetadata,
  KafkaDriver,
  KafkaTransaction,
  KafkaTransactionalProducerDriver,
  ProducedMessage,
  TopicPartitionOffset,
} from '../../../../src/connectors/kafka/driver.ts';
import { KafkaSource } from '../../../../src/connectors/kafka/kafka-source.ts';
import type { SourceDeps, SourceEvent } from '../../../../src/connectors/source.ts';
import { silentLogger, type Logger } from '../../../../src/logger.ts';
import type { Outcome } from '../../../../src/route/processor.ts';
import type { RouteRunner } from '../../../../src/route/route-runner.ts';
import { FakeKafkaConsumer } from '../../../helpers/fake-kafka-consumer.ts';
import type { TransactionStager } from '../../../../src/route/sink.ts';

const TOPIC = 'in';
type Decided = Exclude<Outcome, { kind: 'retry' }>;

/** A route whose writes the test can hold back or fail, per `partition/offset`. */
class FakeRoute {
  decided: string[] = [];
  written: string[] = [];
  private readonly held = new Map<string, () => void>();
  private readonly gates = new Map<string, Promise<void>>();

  hold(id: string): () => void {
    let release = (): void => undefined;
    this.gates.set(id, new Promise<void>((resolve) => (release = resolve)));
    this.held.set(id, release);
    return () => release();
  }

  runner(): Pick<RouteRunner, 'decide' | 'write'> {
    return {
      decide: (record) => {
        this.decided.push(idOf(record.origin));
        return Promise.resolve({
          kind: 'output',
          record: { key: null, value: record.value, headers: {}, origin: record.origin },
          result: null,
          source: record,
        });
      },
      write: async (outcome: Decided, transaction?: TransactionStager) => {
        const id = idOf(outcome.record.origin);
        await this.gates.get(id);
        // Exactly-once: staged after an await, as a sink slow to take its write would.
        transaction?.stage('out', outcome.record);
        this.written.push(id);
        return { kind: 'written' as const, output: outcome.record, result: null };
      },
    };
  }
}

function idOf(origin: Decided['record']['origin']): string {
  return origin.kind === 'kafka' ? `${origin.partition}/${origin.offset}` : '?';
}

const FEATURES: DriverFeatures = {
  client: 'platformatic',
  stableOffsets: true,
  keepsPartitions: true,
  fencesByGeneration: true,
};
const KAFKAJS_FEATURES: DriverFeatures = {
  client: 'kafkajs',
  stableOffsets: false,
  keepsPartitions: false,
  fencesByGeneration: false,
};

/** Transactions the test can make fail at commit; it records what each one carried. */
class FakeTransactions {
  committed: { offsets: TopicPartitionOffset[]; group: GroupMetadata; values: string[] }[] = [];
  aborted = 0;
  failCommits = 0;
  /** Commits the broker takes whose answer is lost: the worker sees them fail. */
  loseCommitAnswers = 0;
  /** Transactions begun so far. */
  begun = 0;
  /** While set, a transaction waits for it before its offsets go out (its outputs are sending). */
  sendGate: Promise<void> | undefined;

  producer(): KafkaTransactionalProducerDriver {
    return {
      connect: () => Promise.resolve(),
      disconnect: () => Promise.resolve(),
      transaction: () => {
        this.begun += 1;
        let sent: { offsets: TopicPartitionOffset[]; group: GroupMetadata } | undefined;
        const values: string[] = [];
        const txn: KafkaTransaction = {
          send: (_topic: string, messages: ProducedMessage[]) => {
            for (const m of messages) values.push(m.value?.toString() ?? '');
            return Promise.resolve();
          },
          sendOffsets: async (group, offsets) => {
            await this.sendGate;
            sent = { group, offsets };
          },
          commit: () => {
            if (this.loseCommitAnswers > 0) {
              this.loseCommitAnswers -= 1;
              if (sent !== undefined) this.committed.push({ ...sent, values });
              return Promise.reject(new Error('REQUEST_TIMED_OUT'));
            }
            if (this.failCommits > 0) {
              this.failCommits -= 1;
              return Promise.reject(new Error('PRODUCER_FENCED'));
            }
            if (sent !== undefined) this.committed.push({ ...sent, values });
            return Promise.resolve();
          },
          abort: () => {
            this.aborted += 1;
            return Promise.resolve();
          },
        };
        return Promise.resolve(txn);
      },
    };
  }

  /** The group's offsets as the committed transactions left them (the last one per partition). */
  stored(): TopicPartitionOffset[] {
    const last = new Map<number, TopicPartitionOffset>();
    for (const c of this.committed) for (const o of c.offsets) last.set(o.partition, o);
    return [...last.values()];
  }

  offsetsFor(partition: number): string[] {
    return this.committed.flatMap((c) =>
      c.offsets.filter((o) => o.partition === partition).map((o) => o.offset),
    );
  }
}

function sourceWith(
  consumer: FakeKafkaConsumer,
  route: FakeRoute,
  events: SourceEvent[] = [],
  transactions?: FakeTransactions,
  topic: {
    partitions: () => number;
    discoveryMs?: number;
    logger?: Logger;
    /** kafkajs' instead of platformatic's: no stable offset reads. */
    features?: DriverFeatures;
  } = {
    partitions: () => 1,
  },
) {
  const config = configSchema.parse({
    models: { m: { path: 'unused' } },
    pipelines: { p: { task: 'textClassification', model: 'm' } },
    routes: [
      {
        source: {
          type: 'kafka',
          topic: TOPIC,
          groupId: 'g',
          ...(topic.discoveryMs !== undefined ? { partitionDiscoveryMs: topic.discoveryMs } : {}),
        },
        pipeline: 'p',
        sink: { type: 'file', path: '-' },
      },
    ],
    connections: { kafka: { brokers: ['127.0.0.1:9'] } },
    delivery: {
      commitIntervalMs: 5,
      mode: transactions === undefined ? 'at-least-once' : 'exactly-once',
    },
  });
  const routeConfig = config.routes[0];
  if (routeConfig?.source.type !== 'kafka') throw new Error('the route needs a kafka source');
  const driver = {
    features: topic.features ?? FEATURES,
    consumer: () => consumer,
    transactionalProducer: () => transactions?.producer(),
    topicPartitions: () => Promise.resolve(new Map([[TOPIC, topic.partitions()]])),
  } as unknown as KafkaDriver;
  const deps: SourceDeps = {
    route: routeConfig,
    delivery: config.delivery,
    runner: route.runner() as RouteRunner,
    onPressure: () => () => undefined,
    // Exactly-once needs a sink that joins the transactions; this one stages nothing.
    sink:
      transactions === undefined
        ? undefined
        : ({ useTransactions: () => undefined } as unknown as SourceDeps['sink']),
    dlq: undefined,
    logger: topic.logger ?? silentLogger,
    onEvent: (e) => events.push(e),
  };
  return new KafkaSource(routeConfig.source, deps, driver);
}

/**
 * An exactly-once source holding partition 0, started; the group's offsets read as `stored` gives
 * them (by default as the committed transactions left them, a stable read).
 */
async function exactlyOnceSource(
  options: {
    features?: DriverFeatures;
    stored?: (transactions: FakeTransactions) => TopicPartitionOffset[];
  } = {},
) {
  const consumer = new FakeKafkaConsumer(TOPIC);
  const route = new FakeRoute();
  const transactions = new FakeTransactions();
  const stored = options.stored ?? ((t: FakeTransactions) => t.stored());
  consumer.stored = () => stored(transactions);
  const source = sourceWith(consumer, route, [], transactions, {
    partitions: () => 1,
    ...(options.features === undefined ? {} : { features: options.features }),
  });
  await source.start();
  consumer.assign([0]);
  return { consumer, route, transactions, source };
}

/**
 * Waits for a state the source reaches by itself. The bound is only a guard against a hang (a
 * loaded CI machine may be slow; vi.waitFor's default second is not a progress bound).
 */
const until = <T>(check: () => T): Promise<T> =>
  vi.waitFor(check, { timeout: 120_000, interval: 5 });

/** Several commit rounds (every 5 ms) pass. */
const rounds = (): Promise<unknown> => sleep(40);

describe('Kafka source through a fake driver', () => {
  it('joins the group again when the topic gains partitions, and says so; not while it stays the same', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    let partitions = 2;
    const lines: string[] = [];
    const push = (_: object, message: string): void => void lines.push(message);
    const logger: Logger = { debug: push, info: push, warn: push, error: push };
    const source = sourceWith(consumer, new FakeRoute(), [], undefined, {
      partitions: () => partitions,
      discoveryMs: 10,
      logger,
    });
    await source.start();
    consumer.assign([0, 1]);
    await sleep(60);
    expect(consumer.rejoins).toBe(0);
    partitions = 4;
    await until(() => expect(consumer.rejoins).toBe(1));
    expect(lines).toContain(
      `topic ${TOPIC} grew from 2 to 4 partitions: joining the group again so that the new ones are read`,
    );
    await sleep(60);
    expect(consumer.rejoins).toBe(1);
    await source.stop();
  });

  it('commits the contiguous written prefix only, in order', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const release = route.hold('0/2');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0]);
    expect(await consumer.deliver(0, [0, 1, 2, 3, 4])).toEqual(['0', '1', '2', '3', '4']);
    await until(() => expect(consumer.committedFor(0)).toEqual(['2']));
    await rounds();
    expect(route.written).toEqual(['0/0', '0/1']);
    expect(consumer.committedFor(0)).toEqual(['2']);
    release();
    await until(() => expect(consumer.committedFor(0)).toEqual(['2', '5']));
    expect(route.written).toEqual(['0/0', '0/1', '0/2', '0/3', '0/4']);
    await source.stop();
  });

  it('a partition revoked by a rebalance: a late batch is not taken, its held record not committed', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const release = route.hold('1/1');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0, 1]);
    await consumer.deliver(1, [0, 1]);
    await until(() => expect(consumer.committedFor(1)).toEqual(['1']));
    consumer.assign([0]);
    expect(await consumer.deliver(1, [2, 3])).toEqual([]);
    release();
    await consumer.deliver(0, [0]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['1']));
    await rounds();
    expect(route.decided).not.toContain('1/2');
    expect(consumer.committedFor(1)).toEqual(['1']);
    await source.stop();
  });

  it('a refused commit is reported and retried, never past an unwritten record', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const events: SourceEvent[] = [];
    const release = route.hold('0/3');
    consumer.failCommits = 2;
    const source = sourceWith(consumer, route, events);
    await source.start();
    consumer.assign([0]);
    await consumer.deliver(0, [0, 1, 2, 3, 4]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3']));
    expect(events.filter((e) => e === 'commit-failed')).toHaveLength(2);
    await rounds();
    expect(consumer.committedFor(0)).toEqual(['3']);
    release();
    await until(() => expect(consumer.committedFor(0)).toEqual(['3', '5']));
    await source.stop();
  });

  it('skips a stale batch and offsets it already took', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0]);
    await consumer.deliver(0, [0, 1, 2]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3']));
    expect(await consumer.deliver(0, [3, 4], true)).toEqual([]);
    expect(await consumer.deliver(0, [1, 2, 3])).toEqual(['3']);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3', '4']));
    expect(route.decided).toEqual(['0/0', '0/1', '0/2', '0/3']);
    await source.stop();
  });

  it('a revocation mid-batch retires only the revoked partition; the kept one commits on', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const releaseKept = route.hold('0/1');
    const releaseRevoked = route.hold('1/1');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0, 1]);
    await consumer.deliver(0, [0, 1, 2]);
    await consumer.deliver(1, [0, 1, 2]);
    await until(() => expect(consumer.committedFor(1)).toEqual(['1']));
    // A rebalance moves partition 1 away while 0/1 and 1/1 are still being written.
    consumer.revoke([1]);
    consumer.assign([0], []);
    releaseRevoked();
    releaseKept();
    await until(() => expect(consumer.committedFor(0)).toEqual(['1', '3']));
    await rounds();
    // Partition 0 went on without being read again; nothing more of partition 1 is committed.
    expect(route.decided.filter((id) => id.startsWith('0/'))).toEqual(['0/0', '0/1', '0/2']);
    expect(consumer.committedFor(1)).toEqual(['1']);
    // A late batch of the revoked partition is not taken.
    expect(await consumer.deliver(1, [3])).toEqual([]);
    await source.stop();
  });

  it('a kept partition keeps its in-flight records across a rejoin', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const release = route.hold('0/0');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0]);
    await consumer.deliver(0, [0, 1]);
    // A rejoin that keeps partition 0 and adds partition 1.
    consumer.assign([0, 1], [1]);
    release();
    await until(() => expect(consumer.committedFor(0)).toEqual(['2']));
    expect(route.written.filter((id) => id.startsWith('0/'))).toEqual(['0/0', '0/1']);
    // The next batch continues where the lane was: 0/0 and 0/1 are not taken again.
    expect(await consumer.deliver(0, [0, 1, 2])).toEqual(['2']);
    await source.stop();
  });

  it('exactly-once: an aborted transaction rewinds its partition and commits on the next one', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const transactions = new FakeTransactions();
    transactions.failCommits = 1;
    const events: SourceEvent[] = [];
    const source = sourceWith(consumer, route, events, transactions);
    await source.start();
    consumer.assign([0]);
    expect(await consumer.deliver(0, [0, 1, 2])).toEqual(['0', '1', '2']);
    // The first transaction fails at commit: aborted, the partition is read again from offset 0.
    await until(() => expect(transactions.aborted).toBe(1));
    await until(() =>
      expect(consumer.seeks).toEqual([{ topic: TOPIC, partition: 0, offset: '0' }]),
    );
    expect(transactions.committed).toEqual([]);
    expect(events).toContain('commit-failed');
    // Read again after the rewind's backoff: the records are taken again and commit this time.
    await until(async () => expect(await consumer.deliver(0, [0, 1, 2])).toEqual(['0', '1', '2']));
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3']));
    // The offsets went with the consumer's membership (KIP-447 fencing by generation).
    expect(transactions.committed[0]?.group).toEqual({
      groupId: 'g',
      generationId: 7,
      memberId: 'm-1',
    });
    expect(consumer.commits).toEqual([]);
    await source.stop();
  });

  it('exactly-once: a partition revoked and given back mid-transaction starts after that transaction', async () => {
    const { consumer, route, transactions, source } = await exactlyOnceSource();
    let openGate = (): void => undefined;
    transactions.sendGate = new Promise<void>((resolve) => (openGate = resolve));
    await consumer.deliver(0, [0, 1, 2]);
    // The transaction of 0..2 is under way; its offsets are not sent yet.
    await until(() => expect(transactions.begun).toBe(1));
    // A rejoin that does not continue the generation: partition 0 is revoked and comes back,
    // restarted from its commit, which a stable read still gives as none.
    consumer.revoke([0]);
    consumer.assign([0], [0]);
    transactions.sendGate = undefined;
    openGate();
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3']));
    // The consumer read the partition again from the commit it saw at the join.
    await consumer.deliver(0, [0, 1, 2, 3]);
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3', '4']));
    await rounds();
    // 0..2 went out once, in the first transaction; the new lane only wrote 3.
    expect(route.written).toEqual(['0/0', '0/1', '0/2', '0/3']);
    expect(transactions.offsetsFor(0)).toEqual(['3', '4']);
    await source.stop();
  });

  it('exactly-once without stable reads: a partition restarted after its transaction committed, read as not yet committed, is not written twice', async () => {
    // kafkajs reads offsets without require_stable: until the commit marker of a transaction is
    // written, the group's offset reads as the one before it. Here it never shows.
    const { consumer, route, transactions, source } = await exactlyOnceSource({
      features: KAFKAJS_FEATURES,
      stored: () => [],
    });
    await consumer.deliver(0, [0, 1, 2]);
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3']));
    // A rejoin (kafkajs restarts every partition): the consumer reads again from the commit it
    // was given, the one before that transaction.
    consumer.revoke([0]);
    consumer.assign([0]);
    await until(async () =>
      expect(await consumer.deliver(0, [0, 1, 2, 3])).toEqual(['0', '1', '2', '3']),
    );
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3', '4']));
    await rounds();
    expect(route.written).toEqual(['0/0', '0/1', '0/2', '0/3']);
    expect(transactions.committed.flatMap((c) => c.values)).toEqual(
      ['0/0', '0/1', '0/2', '0/3'].map((text) => JSON.stringify({ text })),
    );
    await source.stop();
  });

  it('exactly-once: a commit that failed after the broker took it is not written again on the rewind', async () => {
    const { consumer, route, transactions, source } = await exactlyOnceSource();
    // The broker commits the transaction of 0..2, but its answer never reaches the worker.
    transactions.loseCommitAnswers = 1;
    await consumer.deliver(0, [0, 1, 2]);
    await until(() =>
      expect(consumer.seeks).toEqual([{ topic: TOPIC, partition: 0, offset: '0' }]),
    );
    expect(transactions.offsetsFor(0)).toEqual(['3']);
    await until(async () =>
      expect(await consumer.deliver(0, [0, 1, 2, 3])).toEqual(['0', '1', '2', '3']),
    );
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['3', '4']));
    await rounds();
    expect(route.written).toEqual(['0/0', '0/1', '0/2', '0/3']);
    await source.stop();
  });

  it('exactly-once: outputs staged after an await join the transaction of their own record', async () => {
    const consumer = new FakeKafkaConsumer(TOPIC);
    const route = new FakeRoute();
    const transactions = new FakeTransactions();
    const source = sourceWith(consumer, route, [], transactions, { partitions: () => 2 });
    await source.start();
    consumer.assign([0, 1]);
    // Partition 0's write waits while partition 1's goes through: both stage later than the
    // moment their writes began, and concurrently.
    const release = route.hold('0/0');
    await consumer.deliver(0, [0]);
    await consumer.deliver(1, [0, 1]);
    await until(() => expect(transactions.offsetsFor(1)).toEqual(['2']));
    release();
    await until(() => expect(transactions.offsetsFor(0)).toEqual(['1']));
    const valuesOf = (partition: number): string[] =>
      transactions.committed
        .filter((c) => c.offsets.some((o) => o.partition === partition))
        .flatMap((c) => c.values);
    expect(valuesOf(0)).toEqual(['{"text":"0/0"}']);
    expect(valuesOf(1)).toEqual(['{"text":"1/0"}', '{"text":"1/1"}']);
    await source.stop();
  });
});
