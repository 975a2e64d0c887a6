// Exactly-once transactions: each input partition has its own transactional producer, with a
// transactional id made of a prefix, the topic and the partition. Whoever owns the partition
// uses that id, so registering it fences a zombie owner and aborts its open transaction; kafkajs
// sends offsets without the group generation (no KIP-447), so per-worker ids could not fence.
// A driver that sends the generation (features.fencesByGeneration) fences a stale member twice.
// A partition's staged outputs and dead letters go out in one transaction with its consumed
// offset; a failed transaction is aborted and the partition is read again from its last
// committed offset. A transaction's outputs go out in sends of at most `maxSendBytes`: the broker
// refuses a record batch over its message.max.bytes, and a transaction refused for its size
// would be aborted and retried forever (embedding outputs are ~8 KB each).
import type { Logger } from '../../logger.ts';
import type {
  GroupMetadata,
  KafkaDriver,
  KafkaTransactionalProducerDriver,
  TopicPartition,
} from './driver.ts';
import { laneKey, type PartitionLane, type StagedMessage } from './partition-lane.ts';

export interface ExactlyOnceOptions {
  driver: KafkaDriver;
  /** The consumer's membership now: each transaction's offsets are sent with it. */
  group: () => GroupMetadata;
  transactionalIdPrefix: string;
  transactionTimeoutMs: number;
  /** The most bytes one send of a transaction carries (under the broker's message.max.bytes). */
  maxSendBytes: number;
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
   * Commits what the lane staged below `offset` (its commit point) with that offset. The snapshot
   * is taken synchronously, so outputs staged later wait for the next transaction. Rejects after
   * aborting; the caller rewinds the partition.
   */
  async commit(lane: PartitionLane, offset: string): Promise<void> {
    // Outputs of records whose offsets are not yet in the commit point wait for the next one.
    const limit = BigInt(offset);
    const cut = lane.staged.findIndex((s) => s.offset >= limit);
    const staged = cut === -1 ? lane.staged : lane.staged.slice(0, cut);
    lane.staged = cut === -1 ? [] : lane.staged.slice(cut);
    lane.stagedBytes = lane.staged.reduce((sum, s) => sum + s.bytes, 0);
    const producer = await this.acquire(lane.tp);
    const txn = await producer.transaction();
    try {
      for (const [topic, messages] of groupByTopic(staged))
        for (const chunk of chunksOf(messages, this.options.maxSendBytes))
          await txn.send(
            topic,
            chunk.map((s) => s.message),
          );
      await txn.sendOffsets(this.options.group(), [{ ...lane.tp, offset }]);
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

function groupByTopic(staged: StagedMessage[]): Map<string, StagedMessage[]> {
  const grouped = new Map<string, StagedMessage[]>();
  for (const message of staged) {
    const list = grouped.get(message.topic) ?? [];
    list.push(message);
    grouped.set(message.topic, list);
  }
  return grouped;
}

/** Consecutive runs of at most `maxBytes` (a single larger message goes alone). */
export function chunksOf(messages: StagedMessage[], maxBytes: number): StagedMessage[][] {
  const chunks: StagedMessage[][] = [];
  let chunk: StagedMessage[] = [];
  let bytes = 0;
  for (const message of messages) {
    if (chunk.length > 0 && bytes + message.bytes > maxBytes) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(message);
    bytes += message.bytes;
  }
  if (chunk.length > 0) chunks.push(chunk);
  return chunks;
}
