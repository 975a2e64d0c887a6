// A Kafka consumer-group source. The fetch callback only hands records to the route and returns,
// so a broker callback is never held for an inference (kafkajs rebalance loops come from that).
// Each partition writes its outputs in input order and commits the offset after its longest
// prefix of written records: every commitIntervalMs and at stop (at-least-once), or inside the
// partition's transaction with its outputs (exactly-once, see exactly-once.ts).
import { setTimeout as sleep } from 'node:timers/promises';
import type { SourceConfig } from '../../config/schema.ts';
import { ConfigError } from '../../errors.ts';
import type { Outcome } from '../../route/processor.ts';
import { deadLetter } from '../../route/dead-letter.ts';
import type { OutputRecord, SourceRecord } from '../../route/record.ts';
import { recordBytes } from '../../route/sink.ts';
import { Backoff } from '../backoff.ts';
import type { LagSample, Source, SourceDeps } from '../source.ts';
import type {
  Assignment,
  DriverBatch,
  DriverFeatures,
  DriverMessage,
  KafkaConsumerDriver,
  KafkaDriver,
  TopicPartition,
} from './driver.ts';
import { producedMessage } from './driver.ts';
import { PartitionDiscovery } from './partition-discovery.ts';
import { AssignedLanes } from './assigned-lanes.ts';
import { TransactionCommitter } from './exactly-once.ts';
import { PartitionLane } from './partition-lane.ts';
import { WriteAttempts, type Failure } from './write-attempts.ts';

type KafkaSourceConfig = Extract<SourceConfig, { type: 'kafka' }>;

export class KafkaSource implements Source {
  readonly finished = undefined;
  private readonly options: KafkaSourceConfig;
  private readonly deps: SourceDeps;
  private readonly consumer: KafkaConsumerDriver;
  private readonly features: DriverFeatures;
  private readonly transactions: TransactionCommitter | undefined;
  private readonly lanes: AssignedLanes;
  private pressured = false;
  private stopping = false;
  private inFlight = 0;
  private readonly idleWaiters = new Set<() => void>();
  private timer: NodeJS.Timeout | undefined;
  private committing: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;
  /** Exactly-once: the record whose outputs the sinks are staging right now. */
  private staging: { lane: PartitionLane; offset: bigint } | undefined;
  /** Broker outages: the consumer crashed and is being restarted with backoff. */
  private readonly reconnectBackoff = new Backoff({ initialMs: 500, maxMs: 30_000 });
  private outageSince: number | undefined;
  private reconnecting: Promise<void> | undefined;
  private crashes = 0;
  private readonly stopSignal = new AbortController();
  /** Failed writes per record (not counting outages), across the rewinds of its partition. */
  private readonly attempts: WriteAttempts;
  private readonly driver: KafkaDriver;
  private discovery: PartitionDiscovery | undefined;

  constructor(options: KafkaSourceConfig, deps: SourceDeps, driver: KafkaDriver) {
    this.options = options;
    this.deps = deps;
    this.driver = driver;
    this.attempts = new WriteAttempts(deps.delivery.maxAttempts);
    const exactlyOnce = deps.delivery.mode === 'exactly-once';
    this.features = driver.features;
    this.consumer = driver.consumer({
      groupId: options.groupId,
      readCommitted: exactlyOnce,
      sessionTimeoutMs: options.sessionTimeoutMs,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
    });
    if (exactlyOnce) {
      for (const [field, sink] of [
        ['sink', deps.sink],
        ['dlq', deps.dlq],
      ] as const) {
        if (sink !== undefined && sink.useTransactions === undefined)
          throw new ConfigError(
            `delivery.mode exactly-once needs a Kafka ${field} (its writes join the source's transactions); use a kafka ${field} or at-least-once`,
            { field: `routes.${field}.type` },
          );
        sink?.useTransactions?.({ stage: (t, r) => this.stage(t, r) });
      }
      this.transactions = new TransactionCommitter({
        driver,
        group: () => this.consumer.groupMetadata(),
        transactionalIdPrefix: options.transactionalIdPrefix ?? `hugot-${options.groupId}`,
        transactionTimeoutMs: options.transactionTimeoutMs,
        maxSendBytes: options.transactionMaxBytes,
        logger: deps.logger,
      });
    }
    const transactions = this.transactions;
    this.lanes = new AssignedLanes({
      freshLane: (tp, old, after) => {
        const lane = new PartitionLane(tp, old?.committed);
        if (transactions !== undefined) lane.ready = settledLater(this.fence(lane, after));
        return lane;
      },
      ...(transactions !== undefined ? { release: (tp) => transactions.release(tp) } : {}),
    });
  }

  async start(): Promise<void> {
    this.consumer.onRevoked((revoked) => this.revoke(revoked));
    this.consumer.onAssigned((assignment) => this.assign(assignment));
    this.consumer.onCrash((err) => this.crashed(err));
    this.unsubscribe = this.deps.onPressure((pressure) => {
      this.pressured = pressure === 'pause';
      this.updateFlow();
    });
    await this.consumer.connect();
    await this.consumer.subscribe(this.options.topic, this.options.fromBeginning);
    await this.consumer.run({ onBatch: (batch) => this.take(batch) });
    this.timer = setInterval(() => void this.commitAll(), this.deps.delivery.commitIntervalMs);
    if (this.options.partitionDiscoveryMs > 0) {
      this.discovery = new PartitionDiscovery({
        driver: this.driver,
        consumer: this.consumer,
        topic: this.options.topic,
        intervalMs: this.options.partitionDiscoveryMs,
        logger: this.deps.logger,
        busy: () => this.stopping || this.reconnecting !== undefined,
      });
      await this.discovery.start();
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.stopSignal.abort();
    this.unsubscribe?.();
    clearInterval(this.timer);
    this.discovery?.stop();
    this.consumer.pause(this.lanes.all().map((l) => l.tp));
    await new Promise<void>((resolve) => {
      this.idleWaiters.add(resolve);
      this.settle();
    });
    await this.commitAll();
    await this.consumer.disconnect();
    await this.transactions?.releaseAll();
  }

  /** Per partition: high watermark minus the group's committed offset, asked of the brokers. */
  async lag(): Promise<LagSample[]> {
    const lag = (await this.consumer.lag?.(this.options.topic)) ?? [];
    return lag.map(({ partition, lag: behind }) => ({
      of: { topic: this.options.topic, partition: String(partition) },
      lag: behind,
    }));
  }

  /**
   * The consumer stopped (the broker went away, the coordinator moved): restart it with jittered
   * backoff until it runs again, however long the outage. Never exits the process; a bound
   * after which the source gives up would report 'failed' through onHealth.
   */
  private crashed(err: Error): void {
    this.crashes += 1;
    if (this.stopping) return;
    this.outageSince ??= performance.now();
    this.deps.logger.warn(
      { err, topic: this.options.topic },
      'the Kafka consumer stopped; reconnecting with backoff',
    );
    this.reconnecting ??= this.reconnect(err.message).finally(() => {
      this.reconnecting = undefined;
    });
  }

  private async reconnect(firstReason: string): Promise<void> {
    let reason = firstReason;
    while (!this.stopping) {
      const delay = this.reconnectBackoff.next();
      this.deps.onHealth?.({
        state: 'degraded',
        reason,
        attempt: this.reconnectBackoff.attempts,
        sinceMs: Math.round(performance.now() - (this.outageSince ?? performance.now())),
      });
      try {
        await sleep(delay, undefined, { signal: this.stopSignal.signal, ref: false });
      } catch {
        return;
      }
      const crashesBefore = this.crashes;
      try {
        await this.consumer.restart();
        // kafkajs reports a failed join as a crash from inside run(): try again.
        if (this.crashes === crashesBefore) return;
      } catch (err) {
        reason = err instanceof Error ? err.message : String(err);
        this.deps.logger.warn(
          { err, topic: this.options.topic, attempt: this.reconnectBackoff.attempts },
          'reconnecting to Kafka failed; trying again',
        );
      }
    }
  }

  /**
   * Partitions taken away: their lanes retire (their records in flight belong to the next owner,
   * and their running generations are cancelled); other partitions' lanes go on untouched.
   */
  private revoke(revoked: TopicPartition[]): void {
    const retired = this.lanes.revoke(revoked);
    this.attempts.keepOnly((key) => this.lanes.has(key));
    if (retired.length > 0)
      this.deps.logger.info(
        { topic: this.options.topic, partitions: retired.map((tp) => tp.partition) },
        'Kafka partitions revoked',
      );
  }

  /**
   * A (re)join. Partitions the driver restarted from their commits get fresh lanes (their old
   * lanes retire); kept partitions keep their lanes and records in flight; lanes of partitions
   * no longer assigned retire.
   */
  private assign(assignment: Assignment): void {
    if (this.outageSince !== undefined) {
      this.deps.logger.info(
        {
          topic: this.options.topic,
          outageMs: Math.round(performance.now() - this.outageSince),
          attempts: this.reconnectBackoff.attempts,
        },
        'the Kafka consumer is back in its group',
      );
      this.outageSince = undefined;
      this.reconnectBackoff.reset();
    }
    // Every (re)join: the source is in its group (readiness), and a rebalance happened (metrics).
    this.deps.onHealth?.({ state: 'healthy' });
    this.deps.onEvent?.('rebalance');
    this.lanes.assign(assignment);
    this.attempts.keepOnly((key) => this.lanes.has(key));
    this.deps.logger.info(
      {
        topic: this.options.topic,
        partitions: assignment.partitions.map((tp) => tp.partition),
        restarted: assignment.restarted.map((tp) => tp.partition),
      },
      'Kafka partitions assigned',
    );
    // Kept partitions keep their flow (a full or held lane stays paused); updateFlow resumes the rest.
    this.consumer.resume(assignment.restarted);
    this.updateFlow();
  }

  /**
   * Exactly-once: waits until the partition's previous lane here settled (`after`: its last
   * transaction, and the release of its producer if the partition had left), registers the
   * transactional id (which settles a zombie's open transaction), then reads the committed
   * offset: records below it were fetched from an older commit and are already in the output.
   */
  private async fence(lane: PartitionLane, after: Promise<void>): Promise<void> {
    const transactions = this.transactions as TransactionCommitter;
    await after;
    await transactions.acquire(lane.tp);
    const floor = await this.settledCommit(lane.tp);
    if (floor !== undefined) {
      lane.floor = floor;
      lane.committed = floor.toString();
    }
  }

  /**
   * Without stable offsets (KIP-447's require_stable; kafkajs cannot ask), the offsets of a
   * transaction a fenced worker committed just before it died may not be visible at the first
   * read: reading a stale one would process that transaction's records again. Read until two
   * reads a moment apart agree, keeping the highest.
   */
  private async settledCommit(tp: TopicPartition): Promise<bigint | undefined> {
    const read = async (): Promise<bigint | undefined> => {
      const committed = await this.consumer.committed(tp.topic);
      const mine = committed.find((c) => c.partition === tp.partition);
      return mine !== undefined && BigInt(mine.offset) >= 0n ? BigInt(mine.offset) : undefined;
    };
    // A stable read (KIP-447) waits for pending transactional offsets itself.
    if (this.features.stableOffsets) return read();
    let best = await read();
    for (let attempt = 0; attempt < 8; attempt += 1) {
      await sleep(250);
      const again = await read();
      if (again === best) return best;
      if (again !== undefined && (best === undefined || again > best)) best = again;
    }
    return best;
  }

  private take(batch: DriverBatch): void {
    if (this.stopping || batch.isStale()) return;
    const lane = this.lanes.get(batch);
    if (lane === undefined) return;
    if (lane.held) {
      this.consumer.pause([lane.tp]);
      return;
    }
    const next = lane.offsets.next;
    for (const message of batch.messages) {
      if (next !== undefined && BigInt(message.offset) < next) continue;
      if (this.pressured || lane.offsets.inFlight >= this.options.maxInFlightPerPartition) {
        lane.full = !this.pressured;
        this.consumer.pause([lane.tp]);
        return;
      }
      this.accept(lane, message);
      batch.resolve(message.offset);
    }
  }

  private accept(lane: PartitionLane, message: DriverMessage): void {
    const record: SourceRecord = {
      value: message.value ?? Buffer.alloc(0),
      ...(message.value === null ? { tombstone: true } : {}),
      key: message.key,
      headers: message.headers,
      origin: {
        kind: 'kafka',
        topic: lane.tp.topic,
        partition: lane.tp.partition,
        offset: message.offset,
      },
      signal: lane.signal,
    };
    lane.first ??= message.offset;
    lane.offsets.receive(message.offset);
    const ticket = lane.writer.ticket();
    this.inFlight += 1;
    const exhausted = this.attempts.exhausted(lane.key, message.offset);
    const decided =
      exhausted !== undefined
        ? Promise.resolve(this.giveUp(record, exhausted))
        : this.deps.runner.decide(record);
    decided
      .then(
        (outcome) => lane.writer.complete(ticket, () => this.write(lane, message, outcome)),
        (err: unknown) => {
          // Records after it must not wait for a write that will never come.
          lane.writer.skip(ticket);
          throw err;
        },
      )
      .catch((err: unknown) => this.fail(lane, err, message.offset))
      .finally(() => {
        this.inFlight -= 1;
        if (lane.full && lane.offsets.inFlight < this.options.maxInFlightPerPartition / 2) {
          lane.full = false;
          this.updateFlow();
        }
        this.settle();
      });
  }

  private async write(
    lane: PartitionLane,
    message: DriverMessage,
    outcome: Exclude<Outcome, { kind: 'retry' }>,
  ): Promise<void> {
    // A retired lane's records belong to the partition's next reader; writing them would only
    // make duplicates.
    if (lane.retired) return;
    await lane.ready;
    if (lane.retired) return;
    if (lane.floor === undefined || BigInt(message.offset) >= lane.floor) {
      this.staging = { lane, offset: BigInt(message.offset) };
      try {
        await this.deps.runner.write(outcome);
      } finally {
        this.staging = undefined;
      }
    }
    if (lane.retired) return;
    lane.offsets.complete(message.offset);
    this.attempts.written(lane.key, message.offset);
    if (
      this.transactions !== undefined &&
      (lane.staged.length >= this.options.transactionMaxRecords ||
        lane.stagedBytes >= this.options.transactionMaxBytes)
    )
      void this.commitLane(lane);
  }

  /** The record failed maxAttempts times: its dead letter replaces it. */
  private giveUp(record: SourceRecord, failure: Failure): Exclude<Outcome, { kind: 'retry' }> {
    const code = 'MAX_ATTEMPTS';
    const message = `writing the record failed ${failure.count} times (delivery.maxAttempts ${this.attempts.maxAttempts}); last error: ${failure.reason}`;
    return { kind: 'dead', record: deadLetter(record, 'sink', code, message), code, message };
  }

  /** Exactly-once: the sinks hand their writes here (synchronously within write()). */
  private stage(topic: string, record: OutputRecord): void {
    const staging = this.staging;
    if (staging === undefined || staging.lane.retired)
      throw new Error(
        `no open transaction for ${record.origin.kind === 'kafka' ? `partition ${record.origin.partition}` : 'this record'}`,
      );
    const bytes = recordBytes(record);
    staging.lane.staged.push({
      offset: staging.offset,
      topic,
      message: producedMessage(record),
      bytes,
    });
    staging.lane.stagedBytes += bytes;
  }

  /**
   * A write failed: the lane retires and the partition is read again from its commit, after a
   * backoff. A failure that is not an outage counts against the record: at maxAttempts it goes
   * to the DLQ when it is read again, instead of stalling its partition forever.
   */
  private fail(lane: PartitionLane, err: unknown, offset: string): void {
    if (lane.retired) return;
    if (this.stopping) {
      // Shutting down: the record stays unacknowledged (the commit stops before it) and the
      // partition's next reader takes it; no rewind, no attempt counted.
      this.deps.logger.debug(
        { err, topic: lane.tp.topic, partition: lane.tp.partition, offset },
        'a record was left for the next reader',
      );
      return;
    }
    const { attempt, transient } = this.attempts.failed(lane.key, offset, err);
    this.deps.logger.error(
      {
        err,
        topic: lane.tp.topic,
        partition: lane.tp.partition,
        offset,
        ...(transient ? { transient } : { attempt, maxAttempts: this.attempts.maxAttempts }),
      },
      'a record could not be written; reading its partition again from the last commit',
    );
    this.rewind(lane);
  }

  private rewind(lane: PartitionLane): void {
    if (lane.retired || this.lanes.get(lane.tp) !== lane) return;
    lane.retire();
    const fresh = new PartitionLane(lane.tp, lane.committed);
    fresh.floor = lane.floor;
    if (this.transactions !== undefined) {
      // A transaction of the retired lane may still commit; the floor then skips its records.
      fresh.ready = (async () => {
        await lane.committing?.catch(() => undefined);
        fresh.committed = lane.committed;
        if (lane.committed !== undefined) fresh.floor = BigInt(lane.committed);
      })();
    }
    this.lanes.replace(fresh);
    const from = lane.rewindPoint();
    if (from !== undefined && !this.stopping) this.consumer.seek({ ...lane.tp, offset: from });
    // Reading again at once would re-infer the same records ~10 times a second while the cause
    // lasts (a sink down): the partition waits out a jittered, growing backoff first.
    fresh.held = true;
    this.consumer.pause([fresh.tp]);
    const release = setTimeout(() => {
      fresh.held = false;
      this.updateFlow();
    }, this.attempts.nextRewindDelayMs(lane.key));
    release.unref();
    this.updateFlow();
  }

  private updateFlow(): void {
    if (this.stopping) return;
    const lanes = this.lanes.all();
    if (this.pressured) this.consumer.pause(lanes.map((l) => l.tp));
    else this.consumer.resume(lanes.filter((l) => !l.full && !l.held).map((l) => l.tp));
  }

  private settle(): void {
    if (this.inFlight > 0) return;
    for (const resolve of this.idleWaiters) resolve();
    this.idleWaiters.clear();
  }

  /** Commits every live lane's prefix; one round at a time. */
  private commitAll(): Promise<void> {
    if (this.committing !== undefined) return this.committing;
    // No group to commit to during an outage; the rejoin restarts from the last commit anyway.
    if (this.outageSince !== undefined) return Promise.resolve();
    const round = (async () => {
      try {
        if (this.transactions !== undefined) {
          await Promise.all(this.lanes.all().map((lane) => this.commitLane(lane)));
          return;
        }
        const lanes = this.lanes.all().filter((l) => !l.retired);
        const offsets = lanes.flatMap((lane) => {
          const offset = lane.offsets.commitPoint();
          return offset === undefined || offset === lane.committed ? [] : [{ lane, offset }];
        });
        if (offsets.length === 0) return;
        await this.consumer.commit(offsets.map(({ lane, offset }) => ({ ...lane.tp, offset })));
        for (const { lane, offset } of offsets) lane.committed = offset;
      } catch (err) {
        // A rebalance in progress refuses commits; the new owner reads from the last good one.
        this.deps.logger.warn({ err, topic: this.options.topic }, 'offset commit failed');
        this.deps.onEvent?.('commit-failed');
      }
    })().finally(() => {
      if (this.committing === round) this.committing = undefined;
    });
    this.committing = round;
    return round;
  }

  private commitLane(lane: PartitionLane): Promise<void> {
    const transactions = this.transactions as TransactionCommitter;
    if (lane.committing !== undefined) return lane.committing;
    const round = (async () => {
      try {
        await lane.ready;
        if (lane.retired) return;
        await transactions.commit(lane);
      } catch (err) {
        this.deps.logger.warn(
          { err, topic: lane.tp.topic, partition: lane.tp.partition },
          'transaction aborted; reading the partition again from its last commit',
        );
        this.deps.onEvent?.('commit-failed');
        this.rewind(lane);
      }
    })().finally(() => {
      if (lane.committing === round) lane.committing = undefined;
    });
    lane.committing = round;
    return round;
  }
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
