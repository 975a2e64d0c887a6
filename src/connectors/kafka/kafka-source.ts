// A Kafka consumer-group source. The fetch callback only hands records to the route and returns,
// so a broker callback is never held for an inference (kafkajs rebalance loops come from that).
// Each partition writes its outputs in input order and commits the offset after its longest
// prefix of written records; how, and what a record's writes join, is its delivery's
// (delivery.ts: at-least-once.ts, exactly-once.ts). A failed write rewinds its partition.
import type { SourceConfig } from '../../config/schema.ts';
import type { Outcome } from '../../route/processor.ts';
import { deadLetter } from '../../route/dead-letter.ts';
import type { SourceRecord } from '../../route/record.ts';
import type { LagSample, Source, SourceDeps } from '../source.ts';
import type {
  Assignment,
  DriverBatch,
  DriverMessage,
  KafkaConsumerDriver,
  KafkaDriver,
  TopicPartition,
} from './driver.ts';
import { AssignedLanes } from './assigned-lanes.ts';
import { AtLeastOnce } from './at-least-once.ts';
import { ConsumerRestarts } from './consumer-restarts.ts';
import type { Delivery } from './delivery.ts';
import { ExactlyOnce } from './exactly-once.ts';
import { CommitPolicy } from './offset-tracker.ts';
import { PartitionDiscovery } from './partition-discovery.ts';
import type { PartitionLane } from './partition-lane.ts';
import { WriteAttempts, type Failure } from './write-attempts.ts';

type KafkaSourceConfig = Extract<SourceConfig, { type: 'kafka' }>;

export class KafkaSource implements Source {
  readonly finished = undefined;
  private readonly options: KafkaSourceConfig;
  private readonly deps: SourceDeps;
  private readonly consumer: KafkaConsumerDriver;
  private readonly policy: CommitPolicy;
  private readonly delivery: Delivery;
  private readonly lanes: AssignedLanes;
  private readonly restarts: ConsumerRestarts;
  private pressured = false;
  private stopping = false;
  private inFlight = 0;
  private readonly idleWaiters = new Set<() => void>();
  private committing: Promise<void> | undefined;
  private unsubscribe: (() => void) | undefined;
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
    const consumer = driver.consumer({
      groupId: options.groupId,
      readCommitted: exactlyOnce,
      sessionTimeoutMs: options.sessionTimeoutMs,
      heartbeatIntervalMs: options.heartbeatIntervalMs,
    });
    this.consumer = consumer;
    const policy = new CommitPolicy({
      intervalMs: deps.delivery.commitIntervalMs,
      maxRecords: options.transactionMaxRecords,
      maxBytes: options.transactionMaxBytes,
    });
    this.policy = policy;
    this.delivery = exactlyOnce
      ? new ExactlyOnce({
          driver,
          consumer,
          policy,
          transactionalIdPrefix: options.transactionalIdPrefix ?? `hugot-${options.groupId}`,
          transactionTimeoutMs: options.transactionTimeoutMs,
          maxSendBytes: options.transactionMaxBytes,
          deps,
          rewind: (lane) => this.rewind(lane),
        })
      : new AtLeastOnce({ consumer, policy });
    this.lanes = new AssignedLanes(this.delivery);
    this.restarts = new ConsumerRestarts({
      consumer,
      topic: options.topic,
      logger: deps.logger,
      onHealth: deps.onHealth,
    });
  }

  async start(): Promise<void> {
    this.consumer.onRevoked((revoked) => this.revoke(revoked));
    this.consumer.onAssigned((assignment) => this.assign(assignment));
    this.consumer.onCrash((err) => this.restarts.crashed(err));
    this.unsubscribe = this.deps.onPressure((pressure) => {
      this.pressured = pressure === 'pause';
      this.updateFlow();
    });
    await this.consumer.connect();
    await this.consumer.subscribe(this.options.topic, this.options.fromBeginning);
    await this.consumer.run({ onBatch: (batch) => this.take(batch) });
    this.policy.start(() => void this.commitAll());
    if (this.options.partitionDiscoveryMs > 0) {
      this.discovery = new PartitionDiscovery({
        driver: this.driver,
        consumer: this.consumer,
        topic: this.options.topic,
        intervalMs: this.options.partitionDiscoveryMs,
        logger: this.deps.logger,
        busy: () => this.stopping || this.restarts.busy,
      });
      await this.discovery.start();
    }
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.restarts.stop();
    this.unsubscribe?.();
    this.policy.stop();
    this.discovery?.stop();
    this.consumer.pause(this.lanes.all().map((l) => l.tp));
    await new Promise<void>((resolve) => {
      this.idleWaiters.add(resolve);
      this.settle();
    });
    await this.commitAll();
    await this.consumer.disconnect();
    await this.delivery.close();
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
    this.restarts.rejoined();
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
    // Exactly-once: records below the floor are already in a committed transaction.
    if (lane.floor === undefined || BigInt(message.offset) >= lane.floor)
      await this.deps.runner.write(outcome, this.delivery.transactionFor(lane, message.offset));
    if (lane.retired) return;
    lane.offsets.complete(message.offset);
    this.attempts.written(lane.key, message.offset);
    this.delivery.written(lane);
  }

  /** The record failed maxAttempts times: its dead letter replaces it. */
  private giveUp(record: SourceRecord, failure: Failure): Exclude<Outcome, { kind: 'retry' }> {
    const code = 'MAX_ATTEMPTS';
    const message = `writing the record failed ${failure.count} times (delivery.maxAttempts ${this.attempts.maxAttempts}); last error: ${failure.reason}`;
    return { kind: 'dead', record: deadLetter(record, 'sink', code, message), code, message };
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
    const fresh = this.delivery.successor(lane);
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
    if (this.restarts.outage) return Promise.resolve();
    const round = (async () => {
      try {
        await this.delivery.commit(this.lanes.all());
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
}
