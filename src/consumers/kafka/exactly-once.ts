// Exactly-once Kafka -> Kafka: each input partition has its own transactional producer, with a
// transactional id made of a prefix, the topic and the partition. Whoever owns the partition
// uses that id, so registering it fences a zombie owner and aborts its open transaction; kafkajs
// sends offsets without the group generation (no KIP-447), so per-worker ids could not fence.
// A partition's staged outputs and dead letters go out in one transaction with its consumed
// offset; a failed transaction is aborted and the partition is read again from its last
// committed offset.
import type { Logger } from '../../logger.ts';
import type {
  KafkaDriver,
  KafkaTransactionalProducerDriver,
  ProducedMessage,
  TopicPartition,
} from './driver.ts';
import { laneKey, type PartitionLane } from './partition-lane.ts';

export interface ExactlyOnceOptions {
  driver: KafkaDriver;
  groupId: string;
  transactionalIdPrefix: string;
  transactionTimeoutMs: number;
  logger: Logger;
}

export class TransactionCommitter {
  private readonly options: ExactlyOnceOptions;
  private readonly producers = new Map<string, Promise<KafkaTransactionalProducerDriver>>();

  constructor(options: ExactlyOnceOptions) {
    this.options = options;
  }

  transactionalId(tp: TopicPartition): string {
    return `${this.options.transactionalIdPrefix}-${tp.topic}-${tp.partition}`;
  }

  /** Connects (and so fences) the partition's producer; later calls reuse it. */
  acquire(tp: TopicPartition): Promise<KafkaTransactionalProducerDriver> {
    const key = laneKey(tp);
    let producer = this.producers.get(key);
    if (producer === undefined) {
      const driver = this.options.driver.transactionalProducer({
        transactionalId: this.transactionalId(tp),
        transactionTimeoutMs: this.options.transactionTimeoutMs,
      });
      producer = driver.connect().then(() => driver);
      // A failed connect must be retried by the next owner of the lane, not remembered.
      producer.catch(() => this.producers.delete(key));
      this.producers.set(key, producer);
    }
    return producer;
  }

  /** The partition is no longer ours: its producer goes once its last transaction settled. */
  async release(tp: TopicPartition): Promise<void> {
    const key = laneKey(tp);
    const producer = this.producers.get(key);
    this.producers.delete(key);
    if (producer === undefined) return;
    await (await producer.catch(() => undefined))?.disconnect();
  }

  async releaseAll(): Promise<void> {
    const all = [...this.producers.values()];
    this.producers.clear();
    await Promise.allSettled(all.map(async (p) => (await p.catch(() => undefined))?.disconnect()));
  }

  /**
   * Commits what the lane staged with its commit point. The snapshot is taken synchronously, so
   * outputs staged later wait for the next transaction. Rejects after aborting; the caller
   * rewinds the partition.
   */
  async commit(lane: PartitionLane): Promise<void> {
    const offset = lane.offsets.commitPoint();
    if (offset === undefined || offset === lane.committed) return;
    // Outputs of records whose offsets are not yet in the commit point wait for the next one.
    const limit = BigInt(offset);
    const cut = lane.staged.findIndex((s) => s.offset >= limit);
    const staged = cut === -1 ? lane.staged : lane.staged.slice(0, cut);
    lane.staged = cut === -1 ? [] : lane.staged.slice(cut);
    const producer = await this.acquire(lane.tp);
    const txn = await producer.transaction();
    try {
      for (const [topic, messages] of groupByTopic(staged)) await txn.send(topic, messages);
      await txn.sendOffsets(this.options.groupId, [{ ...lane.tp, offset }]);
      await txn.commit();
      lane.committed = offset;
    } catch (err) {
      await txn
        .abort()
        .catch((abortErr: unknown) =>
          this.options.logger.warn({ err: abortErr }, 'aborting a failed transaction failed'),
        );
      throw err;
    }
  }
}

function groupByTopic(staged: { topic: string; message: ProducedMessage }[]) {
  const grouped = new Map<string, ProducedMessage[]>();
  for (const { topic, message } of staged) {
    const list = grouped.get(topic) ?? [];
    list.push(message);
    grouped.set(topic, list);
  }
  return grouped;
}
