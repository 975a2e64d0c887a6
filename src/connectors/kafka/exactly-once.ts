// Exactly-once delivery, Kafka -> Kafka: a record's outputs and dead letters are staged into its
// partition's next transaction (partition-transactions.ts), which carries the partition's offset,
// so outputs and commit go out together or not at all. A partition's transaction commits every
// commit interval, at stop, and sooner once it reached its bounds; a failed one is aborted and the
// partition is read again from its last commit. Before a lane writes, its partition's producer
// fences older holders and the committed offset is read again: records below it (the floor) are
// already in the output.
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from '../../errors.ts';
import type { OutputRecord } from '../../route/record.ts';
import { recordBytes, type TransactionStager } from '../../route/sink.ts';
import type { SourceDeps } from '../source.ts';
import type { Delivery } from './delivery.ts';
import type { KafkaConsumerDriver, KafkaDriver, TopicPartition } from './driver.ts';
import { producedMessage } from './driver.ts';
import type { CommitPolicy } from './offset-tracker.ts';
import { PartitionLane } from './partition-lane.ts';
import { TransactionCommitter } from './partition-transactions.ts';

export interface ExactlyOnceOptions {
  driver: KafkaDriver;
  consumer: Pick<KafkaConsumerDriver, 'groupMetadata' | 'committed'>;
  policy: CommitPolicy;
  transactionalIdPrefix: string;
  transactionTimeoutMs: number;
  /** The most bytes one send of a transaction carries (under the broker's message.max.bytes). */
  maxSendBytes: number;
  /** The route's sinks (both must join the transactions) and where to report. */
  deps: Pick<SourceDeps, 'sink' | 'dlq' | 'logger' | 'onEvent'>;
  /** A transaction failed: the source reads the partition again from its last commit. */
  rewind: (lane: PartitionLane) => void;
}

export class ExactlyOnce implements Delivery {
  private readonly options: ExactlyOnceOptions;
  private readonly transactions: TransactionCommitter;

  constructor(options: ExactlyOnceOptions) {
    this.options = options;
    const { deps } = options;
    for (const [field, sink] of [
      ['sink', deps.sink],
      ['dlq', deps.dlq],
    ] as const) {
      if (sink !== undefined && sink.useTransactions === undefined)
        throw new ConfigError(
          `delivery.mode exactly-once needs a Kafka ${field} (its writes join the source's transactions); use a kafka ${field} or at-least-once`,
          { field: `routes.${field}.type` },
        );
      sink?.useTransactions?.();
    }
    this.transactions = new TransactionCommitter({
      driver: options.driver,
      group: () => options.consumer.groupMetadata(),
      transactionalIdPrefix: options.transactionalIdPrefix,
      transactionTimeoutMs: options.transactionTimeoutMs,
      maxSendBytes: options.maxSendBytes,
      logger: deps.logger,
    });
  }

  freshLane(
    tp: TopicPartition,
    old: PartitionLane | undefined,
    after: Promise<void>,
  ): PartitionLane {
    const lane = new PartitionLane(tp, old?.committed);
    lane.ready = settledLater(this.fence(lane, after, old));
    return lane;
  }

  /** An arrow: the lanes call it detached. */
  readonly release = (tp: TopicPartition): Promise<void> => this.transactions.release(tp);

  successor(failed: PartitionLane): PartitionLane {
    const fresh = new PartitionLane(failed.tp, failed.committed);
    fresh.floor = failed.floor;
    // A transaction of the retired lane may still commit; the floor then skips its records. A
    // commit that failed may have failed after the broker took it (its answer lost): the group's
    // offset, read again, then says so.
    fresh.ready = (async () => {
      await failed.committing?.catch(() => undefined);
      const read = await this.settledCommit(failed.tp).catch((err: unknown) => {
        this.options.deps.logger.warn(
          { err, topic: failed.tp.topic, partition: failed.tp.partition },
          'reading the committed offset after a failed transaction failed; starting after the last transaction this worker saw commit',
        );
        return undefined;
      });
      startAfter(fresh, read, failed.committed);
    })();
    return fresh;
  }

  /** The record's own transaction: its writes stage there whenever they come. */
  transactionFor(lane: PartitionLane, offset: string): TransactionStager {
    const from = BigInt(offset);
    return { stage: (topic, record) => this.stage(lane, from, topic, record) };
  }

  written(lane: PartitionLane): void {
    if (this.options.policy.full(lane.staged.length, lane.stagedBytes)) void this.commitLane(lane);
  }

  async commit(lanes: PartitionLane[]): Promise<void> {
    await Promise.all(lanes.map((lane) => this.commitLane(lane)));
  }

  close(): Promise<void> {
    return this.transactions.releaseAll();
  }

  private stage(lane: PartitionLane, offset: bigint, topic: string, record: OutputRecord): void {
    // The lane's records belong to the partition's next reader, which writes them again.
    if (lane.retired)
      throw new Error(
        `no open transaction for ${record.origin.kind === 'kafka' ? `partition ${record.origin.partition}` : 'this record'}`,
      );
    const bytes = recordBytes(record);
    lane.staged.push({ offset, topic, message: producedMessage(record), bytes });
    lane.stagedBytes += bytes;
  }

  /**
   * Waits until the partition's previous lane here settled (`after`: its last transaction, and
   * the release of its producer if the partition had left), registers the transactional id
   * (which settles a zombie's open transaction), then reads the committed offset: records below
   * it were fetched from an older commit and are already in the output. A read that is not
   * stable can still miss the previous lane's last transaction (its commit marker not yet
   * written); this worker saw that one commit, so the lane starts after the later of the two.
   */
  private async fence(
    lane: PartitionLane,
    after: Promise<void>,
    old: PartitionLane | undefined,
  ): Promise<void> {
    await after;
    await this.transactions.acquire(lane.tp);
    startAfter(lane, await this.settledCommit(lane.tp), old?.committed);
  }

  /**
   * Without stable offsets (KIP-447's require_stable; kafkajs cannot ask), the offsets of a
   * transaction a fenced worker committed just before it died may not be visible at the first
   * read: reading a stale one would process that transaction's records again. Read until two
   * reads a moment apart agree, keeping the highest.
   */
  private async settledCommit(tp: TopicPartition): Promise<bigint | undefined> {
    const read = async (): Promise<bigint | undefined> => {
      const committed = await this.options.consumer.committed(tp.topic);
      const mine = committed.find((c) => c.partition === tp.partition);
      return mine !== undefined && BigInt(mine.offset) >= 0n ? BigInt(mine.offset) : undefined;
    };
    // A stable read (KIP-447) waits for pending transactional offsets itself.
    if (this.options.driver.features.stableOffsets) return read();
    let best = await read();
    for (let attempt = 0; attempt < 8; attempt += 1) {
      await sleep(250);
      const again = await read();
      if (again === best) return best;
      if (again !== undefined && (best === undefined || again > best)) best = again;
    }
    return best;
  }

  /** The lane's next transaction; one at a time per lane. */
  private commitLane(lane: PartitionLane): Promise<void> {
    if (lane.committing !== undefined) return lane.committing;
    const round = (async () => {
      try {
        await lane.ready;
        if (lane.retired) return;
        const offset = this.options.policy.committable(lane.offsets, lane.committed);
        if (offset !== undefined) await this.transactions.commit(lane, offset);
      } catch (err) {
        this.options.deps.logger.warn(
          { err, topic: lane.tp.topic, partition: lane.tp.partition },
          'transaction aborted; reading the partition again from its last commit',
        );
        this.options.deps.onEvent?.('commit-failed');
        this.options.rewind(lane);
      }
    })().finally(() => {
      if (lane.committing === round) lane.committing = undefined;
    });
    lane.committing = round;
    return round;
  }
}

/**
 * The lane's floor and commit: the later of the group's committed offset as read and the last
 * commit this worker's own transactions made (both are committed; the read may lag behind).
 */
function startAfter(lane: PartitionLane, read: bigint | undefined, own: string | undefined): void {
  const seen = own === undefined ? undefined : BigInt(own);
  const floor = read === undefined || (seen !== undefined && seen > read) ? seen : read;
  if (floor === undefined) return;
  lane.floor = floor;
  lane.committed = floor.toString();
}

/**
 * A lane's readiness is awaited by its writes, maybe never (no record comes, the lane retires):
 * its failure (a fencing refused) must not become an unhandled rejection, which ends the process.
 * The writes that await it still see it fail.
 */
function settledLater(ready: Promise<void>): Promise<void> {
  ready.catch(() => undefined);
  return ready;
}
