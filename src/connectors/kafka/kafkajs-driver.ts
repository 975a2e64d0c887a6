// The driver seam implemented with kafkajs 2.x. kafkajs facts this relies on:
// - eachBatch with eachBatchAutoResolve: false and autoCommit: false: the callback resolves the
//   offsets it took and returns at once; nothing is committed unless we commit.
// - every (re)join builds a new offset manager, so every assigned partition (kept ones too)
//   restarts from its committed offset; GROUP_JOIN is the only rebalance signal (no revoke hook).
// - consumer.stop() forgets the group, so offsets must be committed before disconnect().
// - sendOffsets uses TxnOffsetCommit without the group generation (no KIP-447), so zombie
//   fencing needs one transactional id per input partition.
// - its read_committed filter lets aborted records through; kafkajs-read-committed.ts replaces it
//   and must be imported before kafkajs.
// - its request queue re-arms a 1 ms (negative, Node 24's TimeoutNegativeWarning) timer when idle,
//   a wake-up loop per connection; kafkajs-negative-timeout.ts arms it only when there is work.
import { readCommittedFilterActive } from './kafkajs-read-committed.ts';
import './kafkajs-negative-timeout.ts';
import {
  Kafka,
  logLevel,
  type Consumer,
  type IHeaders,
  type LogEntry,
  type Message,
  type Producer,
} from 'kafkajs';
import type { KafkaConnectionConfig } from '../../config/connection-schema.ts';
import type { Logger } from '../../logger.ts';
import { registerCompressionCodecs } from './compression-codecs.ts';
import { kafkaConnectError, type KafkaSecurity } from './kafka-security.ts';
import type { Headers } from '../../route/record.ts';
import type {
  Assignment,
  ConsumerOptions,
  DriverBatch,
  DriverFeatures,
  GroupMetadata,
  KafkaConsumerDriver,
  KafkaDriver,
  KafkaProducerDriver,
  KafkaTransaction,
  KafkaTransactionalProducerDriver,
  ProducedMessage,
  TopicPartition,
  TopicPartitionOffset,
  TransactionalProducerOptions,
} from './driver.ts';

export interface KafkajsDriverOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  /** TLS and SASL options, files and secrets already read (kafka-security.ts). */
  security?: KafkaSecurity;
  /** Turns a refused connection into a ConnectionError naming the config field. */
  connection?: KafkaConnectionConfig;
  connectionTimeoutMs?: number;
  authenticationTimeoutMs?: number;
}

export class KafkajsDriver implements KafkaDriver {
  readonly features: DriverFeatures = {
    client: 'kafkajs',
    stableOffsets: false,
    keepsPartitions: false,
    fencesByGeneration: false,
  };
  private readonly kafka: Kafka;
  private readonly explain: (err: unknown) => Error;
  private readonly logger: Logger;

  async topicPartitions(topics: readonly string[]): Promise<Map<string, number>> {
    const admin = this.kafka.admin();
    try {
      await admin.connect();
      const names = new Set(await admin.listTopics());
      const existing = topics.filter((t) => names.has(t));
      const counts = new Map<string, number>();
      if (existing.length === 0) return counts;
      const { topics: described } = await admin.fetchTopicMetadata({ topics: existing });
      for (const t of described) counts.set(t.name, t.partitions.length);
      return counts;
    } catch (err) {
      throw this.explain(err);
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }

  constructor(options: KafkajsDriverOptions) {
    const { logger } = options;
    this.logger = logger;
    // Topics written with zstd, snappy or lz4 would otherwise crash the consumer.
    registerCompressionCodecs();
    const connection = options.connection;
    this.explain = (err) => kafkaConnectError(err, connection);
    this.kafka = new Kafka({
      clientId: options.clientId,
      brokers: options.brokers,
      ...(options.security?.ssl !== undefined ? { ssl: options.security.ssl } : {}),
      ...(options.security?.sasl !== undefined ? { sasl: options.security.sasl } : {}),
      ...(options.connectionTimeoutMs !== undefined
        ? { connectionTimeout: options.connectionTimeoutMs }
        : {}),
      ...(options.authenticationTimeoutMs !== undefined
        ? { authenticationTimeout: options.authenticationTimeoutMs }
        : {}),
      logLevel: logLevel.WARN,
      logCreator:
        () =>
        ({ level, log }: LogEntry) => {
          const { message, ...fields } = log;
          if (level <= logLevel.ERROR) logger.error({ kafkajs: fields }, message);
          else if (level === logLevel.WARN) logger.warn({ kafkajs: fields }, message);
          else logger.debug({ kafkajs: fields }, message);
        },
    });
  }

  consumer(options: ConsumerOptions): KafkaConsumerDriver {
    if (options.readCommitted && !readCommittedFilterActive)
      this.logger.warn(
        { groupId: options.groupId },
        'kafkajs was loaded before its read_committed filter was replaced: records of aborted transactions may be read',
      );
    return new KafkajsConsumer(
      this.kafka.consumer({
        groupId: options.groupId,
        readUncommitted: !options.readCommitted,
        // kafkajs restarts a crashed consumer itself only for some errors and after a fixed
        // delay; never letting it means every crash reaches onCrash, and the source restarts
        // with its own jittered backoff (kafka-source.ts).
        retry: { restartOnFailure: () => Promise.resolve(false) },
        ...(options.sessionTimeoutMs !== undefined
          ? { sessionTimeout: options.sessionTimeoutMs }
          : {}),
        ...(options.heartbeatIntervalMs !== undefined
          ? { heartbeatInterval: options.heartbeatIntervalMs }
          : {}),
      }),
      this.kafka,
      options.groupId,
      this.explain,
    );
  }

  producer(): KafkaProducerDriver {
    const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    return {
      connect: () =>
        producer.connect().catch((err: unknown) => {
          throw this.explain(err);
        }),
      send: async (topic, messages) => {
        await producer.send({ topic, acks: -1, messages: messages.map(toKafkajs) });
      },
      disconnect: () => producer.disconnect(),
    };
  }

  transactionalProducer(options: TransactionalProducerOptions): KafkaTransactionalProducerDriver {
    const producer: Producer = this.kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      transactionalId: options.transactionalId,
      transactionTimeout: options.transactionTimeoutMs,
    });
    return {
      connect: async () => {
        await producer.connect().catch((err: unknown) => {
          throw this.explain(err);
        });
        // kafkajs registers the transactional id (InitProducerId, which fences an older holder
        // and settles its open transaction) only at the first transaction(), not at connect().
        // An empty transaction ends locally without a request to the broker.
        const empty = await producer.transaction();
        await empty.abort();
      },
      transaction: async (): Promise<KafkaTransaction> => {
        const txn = await producer.transaction();
        return {
          send: async (topic, messages) => {
            await txn.send({ topic, acks: -1, messages: messages.map(toKafkajs) });
          },
          // kafkajs' TxnOffsetCommit carries no generation: only the group id is used.
          sendOffsets: (group, offsets) =>
            txn.sendOffsets({ consumerGroupId: group.groupId, topics: byTopic(offsets) }),
          commit: () => txn.commit(),
          abort: () => txn.abort(),
        };
      },
      disconnect: () => producer.disconnect(),
    };
  }
}

/**
 * kafkajs throws synchronously from pause/resume/seek while a crashed consumer has no group
 * (between the crash and the restart): thrown from a record's completion, that was an unhandled
 * rejection that ended the process. Nothing is lost by skipping them: the rejoin starts every
 * partition from its commit and the source re-applies pauses at that assignment.
 */
function whileRunning(operation: () => void): void {
  try {
    operation();
  } catch (err) {
    if (!(err instanceof Error && err.message.includes('Consumer group was not initialized')))
      throw err;
  }
}

class KafkajsConsumer implements KafkaConsumerDriver {
  private runOptions: Parameters<KafkaConsumerDriver['run']>[0] | undefined;
  private readonly consumer: Consumer;
  private readonly kafka: Kafka;
  private readonly groupId: string;
  private readonly explain: (err: unknown) => Error;
  /** kafkajs does not report the generation; its sendOffsets would not send it anyway. */
  private readonly generationId = -1;
  private memberId = '';

  constructor(
    consumer: Consumer,
    kafka: Kafka,
    groupId: string,
    explain: (err: unknown) => Error = (err) =>
      err instanceof Error ? err : new Error(String(err)),
  ) {
    this.consumer = consumer;
    this.kafka = kafka;
    this.groupId = groupId;
    this.explain = explain;
  }

  connect(): Promise<void> {
    return this.consumer.connect().catch((err: unknown) => {
      throw this.explain(err);
    });
  }

  subscribe(topic: string, fromBeginning: boolean): Promise<void> {
    return this.consumer.subscribe({ topic, fromBeginning });
  }

  run(options: Parameters<KafkaConsumerDriver['run']>[0]): Promise<void> {
    this.runOptions = options;
    return this.consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async (payload) => {
        const { batch } = payload;
        const driverBatch: DriverBatch = {
          topic: batch.topic,
          partition: batch.partition,
          highWatermark: batch.highWatermark,
          messages: batch.messages.map((m) => ({
            offset: m.offset,
            key: m.key,
            value: m.value,
            headers: headersOf(m.headers),
          })),
          resolve: (offset) => payload.resolveOffset(offset),
          isStale: () => payload.isStale(),
        };
        await options.onBatch(driverBatch);
      },
    });
  }

  /** kafkajs has no rejoin of its own: a fresh membership, every partition from its commit. */
  async rejoin(): Promise<void> {
    await this.consumer.disconnect();
    await this.restart();
  }

  async restart(): Promise<void> {
    const options = this.runOptions;
    if (options === undefined) throw new Error('restart() before run()');
    // A crash already disconnected the consumer; its subscriptions are kept.
    await this.connect();
    await this.run(options);
  }

  pause(partitions: TopicPartition[]): void {
    if (partitions.length > 0)
      whileRunning(() => this.consumer.pause(byTopicPartitions(partitions)));
  }

  resume(partitions: TopicPartition[]): void {
    if (partitions.length > 0)
      whileRunning(() => this.consumer.resume(byTopicPartitions(partitions)));
  }

  seek(position: TopicPartitionOffset): void {
    whileRunning(() => this.consumer.seek(position));
  }

  commit(offsets: TopicPartitionOffset[]): Promise<void> {
    return this.consumer.commitOffsets(offsets);
  }

  async committed(topic: string): Promise<TopicPartitionOffset[]> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const answer = await admin.fetchOffsets({ groupId: this.groupId, topics: [topic] });
      return (answer[0]?.partitions ?? []).map((p) => ({
        topic,
        partition: p.partition,
        offset: p.offset,
      }));
    } finally {
      await admin.disconnect();
    }
  }

  async lag(topic: string): Promise<{ partition: number; lag: number }[]> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      const [ends, committed] = await Promise.all([
        admin.fetchTopicOffsets(topic),
        admin.fetchOffsets({ groupId: this.groupId, topics: [topic] }),
      ]);
      const done = new Map(
        (committed[0]?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]),
      );
      return ends.map((end) => {
        const mine = done.get(end.partition) ?? -1n;
        const from = mine >= 0n ? mine : BigInt(end.low);
        const lag = BigInt(end.high) - from;
        return { partition: end.partition, lag: Number(lag > 0n ? lag : 0n) };
      });
    } finally {
      await admin.disconnect();
    }
  }

  groupMetadata(): GroupMetadata {
    return { groupId: this.groupId, generationId: this.generationId, memberId: this.memberId };
  }

  /** kafkajs restarts every partition from its commit at each join: all of them are restarted. */
  onAssigned(listener: (assignment: Assignment) => void): void {
    this.consumer.on(this.consumer.events.GROUP_JOIN, (event) => {
      this.memberId = event.payload.memberId;
      const assigned: TopicPartition[] = [];
      for (const [topic, partitions] of Object.entries(event.payload.memberAssignment))
        for (const partition of partitions) assigned.push({ topic, partition });
      listener({ partitions: assigned, restarted: assigned });
    });
  }

  /** kafkajs has no revoke hook: onAssigned's `restarted` (every partition) stands for it. */
  onRevoked(): void {
    // Nothing to register.
  }

  onCrash(listener: (err: Error) => void): void {
    this.consumer.on(this.consumer.events.CRASH, (event) => listener(event.payload.error));
  }

  disconnect(): Promise<void> {
    return this.consumer.disconnect();
  }
}

function toKafkajs(message: ProducedMessage): Message {
  return { key: message.key, value: message.value, headers: message.headers };
}

/** kafkajs gives a header's bytes, and a repeated header's values as an array: kept as they are. */
function headersOf(headers: IHeaders | undefined): Headers {
  const out: Headers = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function byTopicPartitions(
  partitions: TopicPartition[],
): { topic: string; partitions: number[] }[] {
  const grouped = new Map<string, number[]>();
  for (const { topic, partition } of partitions) {
    const list = grouped.get(topic) ?? [];
    list.push(partition);
    grouped.set(topic, list);
  }
  return [...grouped].map(([topic, list]) => ({ topic, partitions: list }));
}

function byTopic(
  offsets: TopicPartitionOffset[],
): { topic: string; partitions: { partition: number; offset: string }[] }[] {
  const grouped = new Map<string, { partition: number; offset: string }[]>();
  for (const { topic, partition, offset } of offsets) {
    const list = grouped.get(topic) ?? [];
    list.push({ partition, offset });
    grouped.set(topic, list);
  }
  return [...grouped].map(([topic, partitions]) => ({ topic, partitions }));
}
