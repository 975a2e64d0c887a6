// Kafka as the chaos scenarios see it from outside the worker: topics, producing, offsets, and
// reading a whole topic back (read_committed for exactly-once checks).
// Before kafkajs: kafkajs' own read_committed filter lets aborted records through, which read
// back as duplicates of exactly-once outputs (see the module).
import { readCommittedFilterActive } from '../../src/connectors/kafka/kafkajs-read-committed.ts';
import { Kafka, logLevel, type Admin, type IHeaders } from 'kafkajs';
import { waitForProgress } from '../helpers/progress.ts';

export interface Produced {
  partition: number;
  key: Buffer | string | null;
  value: Buffer | string | null;
  headers?: IHeaders;
}

export interface Consumed {
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: IHeaders;
}

export class KafkaTools {
  readonly kafka: Kafka;
  readonly brokers: string;

  constructor(brokers: string) {
    this.brokers = brokers;
    this.kafka = new Kafka({
      clientId: 'hugot-chaos',
      brokers: brokers.split(','),
      logLevel: logLevel.NOTHING,
      retry: { retries: 8 },
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

  /**
   * Creates the topic and waits for its leaders. A broker that has only just started may still
   * answer "does not host this topic-partition" while it waits for its leaders: retried, as a
   * creation that already happened is harmless (createTopics then reports it exists).
   */
  async createTopic(
    topic: string,
    partitions: number,
    config: Record<string, string> = {},
  ): Promise<void> {
    await whileUnserved(() =>
      this.withAdmin((admin) =>
        admin.createTopics({
          topics: [
            {
              topic,
              numPartitions: partitions,
              configEntries: Object.entries(config).map(([name, value]) => ({ name, value })),
            },
          ],
          waitForLeaders: true,
        }),
      ),
    );
  }

  /** Grows the topic to `count` partitions, as an operator scaling it out does. */
  async addPartitions(topic: string, count: number): Promise<void> {
    await this.withAdmin((admin) =>
      admin.createPartitions({ topicPartitions: [{ topic, count }] }),
    );
  }

  /**
   * Sends in order, in chunks. A topic just created may not be served yet by its leader on a
   * loaded machine ("does not host this topic-partition"): the send is retried, from the first
   * chunk not yet acknowledged (sending an acknowledged one again would duplicate input records).
   */
  async produce(topic: string, messages: readonly Produced[], chunk = 2000): Promise<void> {
    const progress = { start: 0 };
    await whileUnserved(() => this.produceOnce(topic, messages, chunk, progress));
  }

  /** Sends in order, in chunks of at most `chunk` records or about 4 MB. */
  private async produceOnce(
    topic: string,
    messages: readonly Produced[],
    chunk: number,
    progress: { start: number },
  ): Promise<void> {
    const producer = this.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    try {
      let start = progress.start;
      while (start < messages.length) {
        let end = start;
        let bytes = 0;
        while (
          end < messages.length &&
          end - start < chunk &&
          (bytes < 4_000_000 || end === start)
        ) {
          bytes += messages[end]?.value?.length ?? 0;
          end += 1;
        }
        await producer.send({
          topic,
          acks: -1,
          messages: messages.slice(start, end).map((m) => ({ ...m })),
        });
        start = end;
        progress.start = end;
      }
    } finally {
      await producer.disconnect();
    }
  }

  async endOffsets(topic: string): Promise<Map<number, number>> {
    const offsets = await this.withAdmin((admin) => admin.fetchTopicOffsets(topic));
    return new Map(offsets.map((o) => [o.partition, Number(o.high)]));
  }

  async endTotal(topic: string): Promise<number> {
    let total = 0;
    for (const n of (await this.endOffsets(topic)).values()) total += n;
    return total;
  }

  /** Committed offset per partition (-1 where nothing is committed). */
  async committed(groupId: string, topic: string): Promise<Map<number, number>> {
    // A fresh broker's group coordinator may still be loading: its errors are retried.
    const answer = await retrying(() =>
      this.withAdmin((admin) => admin.fetchOffsets({ groupId, topics: [topic] })),
    );
    return new Map((answer[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
  }

  async committedTotal(groupId: string, topic: string): Promise<number> {
    let total = 0;
    for (const n of (await this.committed(groupId, topic)).values()) total += Math.max(0, n);
    return total;
  }

  /**
   * Reads a topic from the beginning until `enough(records)` and then nothing new for `quietMs`;
   * returns what it has when nothing new arrived for `stallMs` (the caller counts what is missing).
   */
  async read(
    topic: string,
    options: {
      readCommitted: boolean;
      enough: (records: readonly Consumed[]) => boolean;
      quietMs?: number;
      stallMs?: number;
    },
  ): Promise<Consumed[]> {
    if (options.readCommitted && !readCommittedFilterActive)
      throw new Error(
        'kafkajs was loaded before its read_committed filter was replaced: aborted records would count as duplicates',
      );
    const quietMs = options.quietMs ?? 3000;
    const stallMs = options.stallMs ?? 60_000;
    const consumer = this.kafka.consumer({
      groupId: `chaos-reader-${topic}-${Math.random().toString(36).slice(2)}`,
      readUncommitted: !options.readCommitted,
      maxBytes: 50 * 1024 * 1024,
    });
    const records: Consumed[] = [];
    let joined = false;
    let last = performance.now();
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true;
      last = performance.now();
    });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages)
          records.push({
            partition: batch.partition,
            offset: Number(m.offset),
            key: m.key,
            value: m.value,
            headers: m.headers ?? {},
          });
        last = performance.now();
        await Promise.resolve();
      },
    });
    try {
      // Done when enough arrived and then nothing for quietMs; a topic short of `enough` (a lost
      // record) ends the read after stallMs without anything new, and the caller counts the loss.
      await waitForProgress(() => ({ joined, n: records.length }), {
        what: `reading ${topic}`,
        done: (seen) => {
          const quiet = performance.now() - last;
          return seen.joined && (quiet >= stallMs || (options.enough(records) && quiet >= quietMs));
        },
        stallMs: stallMs + 10_000,
        intervalMs: 200,
      });
    } finally {
      await consumer.disconnect();
    }
    return records;
  }
}

async function retrying<T>(call: () => Promise<T>, attempts = 10): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await call();
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (attempt >= attempts || !/coordinator|leader|not available/i.test(text)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500 * attempt));
    }
  }
}

/** Runs `attempt` again while the broker says it does not serve the partition yet (a new topic). */
async function whileUnserved<T>(attempt: () => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries += 1) {
    try {
      return await attempt();
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (tries >= 10 || !/does not host this topic-partition|leader/i.test(text)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1000 * tries));
    }
  }
}
