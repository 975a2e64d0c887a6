// Shared by the Kafka integration tests and the e2e benchmark: topics, producing corpus records
// with keys and headers, reading a whole topic back (read_committed or not), committed offsets,
// and a worker config for a Kafka -> Kafka route.
// Before kafkajs: read_committed reads must not see aborted records (kafkajs-read-committed.ts).
import { registerCompressionCodecs } from '../../../src/connectors/kafka/compression-codecs.ts';
import { readCommittedFilterActive } from '../../../src/connectors/kafka/kafkajs-read-committed.ts';
import { Kafka, logLevel, type Admin, type IHeaders, type KafkaConfig } from 'kafkajs';
import { DEFAULT_STALL_MS, waitForProgress } from '../../helpers/progress.ts';
import { CLS_MODEL } from '../../helpers/redis-routes.ts';

// The tests' own kafkajs producers and readers write and read every codec, whichever client the
// worker under test uses (only the kafkajs driver registers them for the worker).
registerCompressionCodecs();

export interface ReadRecord {
  partition: number;
  offset: string;
  key: string | null;
  /** Empty for a tombstone, which `tombstone` tells apart from an empty value. */
  value: Buffer;
  tombstone: boolean;
  /** Text of each header (a repeated one's last value); rawHeaders has them as they came. */
  headers: Record<string, string>;
  rawHeaders: IHeaders;
}

export class KafkaKit {
  readonly kafka: Kafka;
  readonly brokers: string;

  /** `security`: ssl and sasl options for a secured listener. */
  constructor(brokers: string, security: Pick<KafkaConfig, 'ssl' | 'sasl'> = {}) {
    this.brokers = brokers;
    this.kafka = new Kafka({
      clientId: 'hugot-kafka-kit',
      brokers: brokers.split(','),
      logLevel: logLevel.NOTHING,
      ...security,
    });
  }

  async withAdmin<T>(use: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = this.kafka.admin();
    await admin.connect();
    try {
      return await use(admin);
    } finally {
      await admin.disconnect();
    }
  }

  createTopics(topics: { topic: string; partitions: number }[]): Promise<void> {
    return this.withAdmin(async (admin) => {
      await admin.createTopics({
        topics: topics.map((t) => ({ topic: t.topic, numPartitions: t.partitions })),
        waitForLeaders: true,
      });
    });
  }

  /** Grows a topic to `count` partitions (what an operator does to scale a topic out). */
  async addPartitions(topic: string, count: number): Promise<void> {
    await this.withAdmin((admin) =>
      admin.createPartitions({ topicPartitions: [{ topic, count }] }),
    );
  }

  /** Sends raw values (Buffer or string) to chosen partitions, in order, in chunks. */
  async produce(
    topic: string,
    messages: {
      partition: number;
      key: string | null;
      value: Buffer | string | null;
      headers?: Record<string, string>;
    }[],
  ): Promise<void> {
    const producer = this.kafka.producer();
    await producer.connect();
    try {
      for (let i = 0; i < messages.length; i += 2000)
        await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 2000) });
    } finally {
      await producer.disconnect();
    }
  }

  /** Sum of end offsets minus start offsets: how many records (and markers) a topic holds. */
  async endOffsets(topic: string): Promise<Map<number, string>> {
    const offsets = await this.withAdmin((admin) => admin.fetchTopicOffsets(topic));
    return new Map(offsets.map((o) => [o.partition, o.high]));
  }

  async committedOffsets(groupId: string, topic: string): Promise<Map<number, string>> {
    const answer = await this.withAdmin((admin) =>
      admin.fetchOffsets({ groupId, topics: [topic] }),
    );
    return new Map((answer[0]?.partitions ?? []).map((p) => [p.partition, p.offset]));
  }

  /**
   * Reads a topic from the beginning until `count` records arrived (or, with `count`
   * undefined, until nothing new came for `quietMs` after joining), then `quietMs` more to see
   * extras. Fails when fewer than `count` arrived and nothing new came for `stallMs`: a slow
   * machine only makes it wait longer.
   */
  async readAll(
    topic: string,
    options: {
      count?: number;
      readCommitted?: boolean;
      quietMs?: number;
      /** How long the reader may see nothing new before it gives up (default 60 s). */
      stallMs?: number;
      /** @deprecated read as `stallMs`: the wait is bounded by progress, not a total. */
      timeoutMs?: number;
    },
  ): Promise<ReadRecord[]> {
    if (options.readCommitted !== false && !readCommittedFilterActive)
      throw new Error(
        'kafkajs was loaded before its read_committed filter was replaced: aborted records would read as committed',
      );
    const quietMs = options.quietMs ?? 1500;
    const consumer = this.kafka.consumer({
      groupId: `reader-${topic}-${Math.random().toString(36).slice(2)}`,
      readUncommitted: options.readCommitted === false,
    });
    const records: ReadRecord[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    // The quiet period counts from the group join: on a loaded machine joining alone can take
    // longer than quietMs, and an empty answer before it would be a race, not a result.
    let joined = false;
    let last = performance.now();
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
      last = performance.now();
    });
    await consumer.run({
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          const headers: Record<string, string> = {};
          for (const [k, v] of Object.entries(m.headers ?? {}))
            if (v !== undefined) headers[k] = (Array.isArray(v) ? v.at(-1) : v)?.toString() ?? '';
          records.push({
            partition: batch.partition,
            offset: m.offset,
            key: m.key?.toString() ?? null,
            value: m.value ?? Buffer.alloc(0),
            tombstone: m.value === null,
            headers,
            rawHeaders: m.headers ?? {},
          });
        }
        last = performance.now();
        await Promise.resolve();
      },
    });
    const want = options.count === undefined ? 'a quiet topic' : `${options.count} records`;
    try {
      await waitForProgress(() => ({ joined, records: records.length }), {
        what: `reading ${want} from ${topic}`,
        done: (seen) =>
          seen.joined &&
          (options.count === undefined || seen.records >= options.count) &&
          performance.now() - last >= quietMs,
        stallMs: options.stallMs ?? options.timeoutMs ?? DEFAULT_STALL_MS,
        intervalMs: 100,
      });
    } finally {
      await consumer.disconnect();
    }
    return records;
  }
}

/**
 * The Kafka client the workers under test use: HUGOT_KAFKA_CLIENT (set by the vitest project that
 * runs the Kafka files on the other client), else the config's default.
 */
export function kafkaConnection(brokers: string): Record<string, unknown> {
  const client = process.env.HUGOT_KAFKA_CLIENT;
  return { brokers: brokers.split(','), ...(client ? { client } : {}) };
}

/** A one-route Kafka -> Kafka worker config over the tiny classifier (raw, before the schema). */
export function kafkaRouteConfig(options: {
  brokers: string;
  input: string;
  output: string;
  dlq?: string;
  groupId: string;
  mode?: 'at-least-once' | 'exactly-once';
  source?: Record<string, unknown>;
  limits?: Record<string, unknown>;
  modelPath?: string;
}): Record<string, unknown> {
  return {
    models: { cls: { path: options.modelPath ?? CLS_MODEL } },
    pipelines: { classify: { task: 'textClassification', model: 'cls' } },
    routes: [
      {
        name: 'classify',
        source: {
          type: 'kafka',
          topic: options.input,
          groupId: options.groupId,
          sessionTimeoutMs: 10_000,
          heartbeatIntervalMs: 1_000,
          ...options.source,
        },
        pipeline: 'classify',
        sink: { type: 'kafka', topic: options.output },
        ...(options.dlq !== undefined ? { dlq: { type: 'kafka', topic: options.dlq } } : {}),
      },
    ],
    shards: [{ device: 'cpu', threads: 2 }],
    batching: { maxBatchSize: 64, maxWaitMs: 5 },
    connections: { kafka: kafkaConnection(options.brokers) },
    delivery: { mode: options.mode ?? 'at-least-once', commitIntervalMs: 200 },
    ...(options.limits !== undefined ? { limits: options.limits } : {}),
  };
}
