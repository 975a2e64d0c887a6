// The driver seam implemented with @platformatic/kafka (maintained, pure JavaScript). Facts this
// relies on (read in its 2.12.1 sources; docs/sources-and-sinks.md has the whole table):
// - the consumer (platformatic-consumer.ts) fetches itself on consumer.fetch() and filters
//   aborted records again with the Java consumer's algorithm;
// - TxnOffsetCommit is sent with the group's generation and member id (KIP-447), through
//   Transaction.addOffset(message), which reads them from the message's metadata: the driver
//   builds that message from the group metadata the source hands over;
// - InitProducerId sends the client's request `timeout` as the transaction timeout, so a
//   transactional producer's request timeout is the route's transactionTimeoutMs;
// - InitProducerId must be sent with producer id and epoch -1 (see transactionalProducer);
// - beginTransaction() registers the transactional id (fencing an older holder) the first time;
//   cancel() ends the empty transaction locally, without a request;
// - produced headers are a Map written entry by entry: a repeated name takes one Buffer key per value.
import { Admin, Producer, type Message, type MessageToProduce } from '@platformatic/kafka';

type Transaction = Awaited<ReturnType<Producer['beginTransaction']>>;
import type { KafkaConnectionConfig } from '../../config/connection-schema.ts';
import type { Logger } from '../../logger.ts';
import type { Headers } from '../../route/record.ts';
import type {
  ConsumerOptions,
  DriverFeatures,
  KafkaConsumerDriver,
  KafkaDriver,
  KafkaProducerDriver,
  KafkaTransaction,
  KafkaTransactionalProducerDriver,
  ProducedMessage,
  TransactionalProducerOptions,
} from './driver.ts';
import { kafkaConnectError, type KafkaSecurity } from './kafka-security.ts';
import { PlatformaticConsumer } from './platformatic-consumer.ts';
import {
  platformaticClientOptions,
  type PlatformaticClientOptions,
} from './platformatic-options.ts';

export interface PlatformaticDriverOptions {
  brokers: string[];
  clientId: string;
  logger: Logger;
  security?: KafkaSecurity;
  /** Turns a refused connection into a ConnectionError naming the config field. */
  connection?: KafkaConnectionConfig;
  connectionTimeoutMs?: number;
}

export class PlatformaticDriver implements KafkaDriver {
  readonly features: DriverFeatures = {
    client: 'platformatic',
    stableOffsets: true,
    keepsPartitions: true,
    fencesByGeneration: true,
  };
  private readonly client: PlatformaticClientOptions;
  private readonly logger: Logger;
  private readonly explain: (err: unknown) => Error;
  /** By group id: a transaction's offsets go to the coordinator this consumer found. */
  private readonly consumers = new Map<string, PlatformaticConsumer>();

  constructor(options: PlatformaticDriverOptions) {
    this.logger = options.logger;
    this.client = platformaticClientOptions(options);
    const connection = options.connection;
    this.explain = (err) => kafkaConnectError(err, connection);
  }

  async topicPartitions(topics: readonly string[]): Promise<Map<string, number>> {
    const admin = new Admin({ ...this.client });
    try {
      const names = new Set(await admin.listTopics());
      const existing = topics.filter((t) => names.has(t));
      const counts = new Map<string, number>();
      if (existing.length === 0) return counts;
      const metadata = await admin.metadata({
        topics: existing,
        autocreateTopics: false,
        forceUpdate: true,
      });
      for (const [name, topic] of metadata.topics) counts.set(name, topic.partitionsCount);
      return counts;
    } catch (err) {
      throw this.explain(err);
    } finally {
      await admin.close().catch(() => undefined);
    }
  }

  consumer(options: ConsumerOptions): KafkaConsumerDriver {
    const consumer = new PlatformaticConsumer(this.client, options, this.logger, this.explain);
    this.consumers.set(options.groupId, consumer);
    return consumer;
  }

  producer(): KafkaProducerDriver {
    const producer = new Producer({ ...this.client, idempotent: true, acks: -1 });
    return {
      connect: async () => {
        try {
          await producer.metadata({ topics: [] });
        } catch (err) {
          throw this.explain(err);
        }
      },
      send: async (topic, messages) => {
        await producer.send({ messages: messages.map((m) => toPlatformatic(topic, m)) });
      },
      disconnect: () => producer.close(),
    };
  }

  transactionalProducer(options: TransactionalProducerOptions): KafkaTransactionalProducerDriver {
    const producer = new Producer({
      ...this.client,
      idempotent: true,
      acks: -1,
      transactionalId: options.transactionalId,
      timeout: options.transactionTimeoutMs,
      // InitProducerId sends these as the producer's current id and epoch, 0 and 0 by default:
      // against a transactional id an earlier worker registered, the broker answers
      // PRODUCER_FENCED. -1/-1 asks for the id's current producer with a bumped epoch.
      producerId: -1n,
      producerEpoch: -1,
    });
    return {
      connect: async () => {
        try {
          const empty = await producer.beginTransaction();
          await empty.cancel();
        } catch (err) {
          throw this.explain(err);
        }
      },
      transaction: async () => this.transaction(await producer.beginTransaction()),
      disconnect: () => producer.close(),
    };
  }

  private transaction(txn: Transaction): KafkaTransaction {
    return {
      send: async (topic, messages) => {
        await txn.send({ messages: messages.map((m) => toPlatformatic(topic, m)) });
      },
      sendOffsets: async (group, offsets) => {
        const consumer = this.consumers.get(group.groupId);
        if (consumer === undefined)
          throw new Error(`no consumer of group ${group.groupId} to send offsets for`);
        await txn.addConsumer(consumer.client());
        const coordinatorId = consumer.coordinatorId();
        for (const { topic, partition, offset } of offsets) {
          // addOffset commits the message's offset + 1, with the membership in its metadata.
          const consumed = {
            topic,
            partition,
            offset: BigInt(offset) - 1n,
            metadata: { consumer: { ...group, coordinatorId } },
          } as unknown as Message;
          await txn.addOffset(consumed);
        }
      },
      commit: () => txn.commit(),
      abort: async () => {
        try {
          await txn.abort();
        } finally {
          // A failed abort leaves the client thinking a transaction is open: the next
          // beginTransaction() would be refused. The broker aborts it at the timeout or fencing.
          if (!txn.completed) await txn.cancel().catch(() => undefined);
        }
      },
    };
  }
}

function toPlatformatic(topic: string, message: ProducedMessage): MessageToProduce {
  return {
    topic,
    ...(message.key !== null ? { key: message.key } : {}),
    // The client's types say Buffer, but its record writer writes null as Kafka's null value
    // (length -1): a tombstone.
    value: message.value as Buffer,
    headers: headerMap(message.headers),
  };
}

// The client writes a Map's entries as they are, and a Map keys Buffers by identity: a fresh name
// Buffer per value keeps every value of a repeated header name.
function headerMap(headers: Headers): Map<Buffer, Buffer> {
  const map = new Map<Buffer, Buffer>();
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value])
      map.set(Buffer.from(name), Buffer.from(one));
  }
  return map;
}
