// The consumer side of the @platformatic/kafka driver. Its Consumer keeps the group membership
// (join, heartbeats, rejoins); its MessagesStream is not used, because it can neither pause one
// partition nor seek, and its read_committed filter lets some aborted records through. Instead
// this class runs its own fetch loop on consumer.fetch(), on a connection pool of its own (a long
// poll never delays a heartbeat), and keeps each assigned partition's position itself: a
// position moves only when the source resolves a record, as with kafkajs' eachBatch.
//
// Assignments come from 'consumer:group:join'. A partition this member held in the previous
// generation and holds in the next one (same member id, generation + 1) was never anyone else's,
// so it keeps its position and its records in flight; every other change is a revocation or a
// restart from the committed offset.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  Admin,
  ConnectionPool,
  Consumer,
  FetchIsolationLevels,
  findErrorBy,
  ListOffsetTimestamps,
  type ConsumerGroupJoinPayload,
} from '@platformatic/kafka';
import type { Logger } from '../../logger.ts';
import type {
  Assignment,
  ConsumerOptions,
  ConsumerRunOptions,
  DriverBatch,
  GroupMetadata,
  KafkaConsumerDriver,
  TopicPartition,
  TopicPartitionOffset,
} from './driver.ts';
import { fetchedPartition } from './fetched-partition.ts';
import { laneKey } from './partition-lane.ts';
import type { PlatformaticClientOptions } from './platformatic-options.ts';

/** How long a fetch waits on the broker for data: also how late a resume may take effect. */
const MAX_WAIT_MS = 500;
const PARTITION_MAX_BYTES = 1_048_576;
/** While a stable offset read finds a transaction still completing (KIP-447). */
const UNSTABLE_RETRY_MS = 250;
const UNSTABLE_RETRIES = 240;

interface PartitionState {
  tp: TopicPartition;
  /** Next offset to fetch; undefined until read from the group's commit. */
  position: bigint | undefined;
  paused: boolean;
  /** Bumped by a seek: batches fetched before it are stale. */
  epoch: number;
}

export class PlatformaticConsumer implements KafkaConsumerDriver {
  private readonly clientOptions: PlatformaticClientOptions;
  private readonly options: ConsumerOptions;
  private readonly logger: Logger;
  private readonly explain: (err: unknown) => Error;
  private consumer: Consumer;
  private pool: ConnectionPool;
  private admin: Admin | undefined;
  private topic = '';
  private fromBeginning = true;
  private runOptions: ConsumerRunOptions | undefined;
  private readonly states = new Map<string, PartitionState>();
  private member: { memberId: string; generationId: number } | undefined;
  /** After a crash, the next join restarts every partition from its commit. */
  private restartAll = false;
  private running = false;
  private loop = 0;
  private wake: (() => void) | undefined;
  private readonly assignedListeners: ((assignment: Assignment) => void)[] = [];
  private readonly revokedListeners: ((revoked: TopicPartition[]) => void)[] = [];
  private readonly crashListeners: ((err: Error) => void)[] = [];

  constructor(
    client: PlatformaticClientOptions,
    options: ConsumerOptions,
    logger: Logger,
    explain: (err: unknown) => Error,
  ) {
    this.clientOptions = client;
    this.options = options;
    this.logger = logger;
    this.explain = explain;
    this.consumer = this.newConsumer();
    this.pool = new ConnectionPool(client.clientId, client);
  }

  async connect(): Promise<void> {
    try {
      await this.consumer.metadata({ topics: [] });
    } catch (err) {
      throw this.explain(err);
    }
  }

  subscribe(topic: string, fromBeginning: boolean): Promise<void> {
    this.topic = topic;
    this.fromBeginning = fromBeginning;
    this.consumer.topics.track(topic);
    return Promise.resolve();
  }

  async run(options: ConsumerRunOptions): Promise<void> {
    this.runOptions = options;
    try {
      await this.consumer.joinGroup({});
    } catch (err) {
      throw this.explain(err);
    }
    this.running = true;
    const loop = ++this.loop;
    void this.fetchLoop(loop).catch((err: unknown) => this.crash(err));
  }

  async restart(): Promise<void> {
    const options = this.runOptions;
    if (options === undefined) throw new Error('restart() before run()');
    // A fresh client: the old one may hold a half-broken membership and connections.
    await this.consumer.close(true).catch(() => undefined);
    await this.pool.close().catch(() => undefined);
    this.consumer = this.newConsumer();
    this.pool = new ConnectionPool(this.clientOptions.clientId, this.clientOptions);
    this.member = undefined;
    this.restartAll = true;
    await this.subscribe(this.topic, this.fromBeginning);
    await this.run(options);
  }

  async rejoin(): Promise<void> {
    // The leader assigns from its cached metadata: refreshed first, or the new partitions would
    // stay out of the assignment until the cache aged.
    await this.consumer.metadata({ topics: [this.topic], forceUpdate: true });
    await this.consumer.joinGroup({});
  }

  pause(partitions: TopicPartition[]): void {
    for (const tp of partitions) {
      const state = this.states.get(laneKey(tp));
      if (state !== undefined) state.paused = true;
    }
  }

  resume(partitions: TopicPartition[]): void {
    for (const tp of partitions) {
      const state = this.states.get(laneKey(tp));
      if (state !== undefined) state.paused = false;
    }
    this.wake?.();
  }

  seek(position: TopicPartitionOffset): void {
    const state = this.states.get(laneKey(position));
    if (state === undefined) return;
    state.position = BigInt(position.offset);
    state.epoch += 1;
    this.wake?.();
  }

  async commit(offsets: TopicPartitionOffset[]): Promise<void> {
    await this.consumer.commit({
      offsets: offsets.map((o) => ({
        topic: o.topic,
        partition: o.partition,
        offset: BigInt(o.offset),
        leaderEpoch: -1,
      })),
    });
  }

  /** Stable offsets (KIP-447): a transaction still completing is waited for, not read past. */
  async committed(topic: string): Promise<TopicPartitionOffset[]> {
    const metadata = await this.consumer.metadata({ topics: [topic] });
    const count = metadata.topics.get(topic)?.partitionsCount ?? 0;
    const partitionIndexes = [...Array(count).keys()];
    this.admin ??= new Admin({ ...this.clientOptions });
    for (let attempt = 0; ; attempt += 1) {
      try {
        const groups = await this.admin.listConsumerGroupOffsets({
          groups: [{ groupId: this.options.groupId, topics: [{ name: topic, partitionIndexes }] }],
          requireStable: true,
        });
        const partitions = groups[0]?.topics.find((t) => t.name === topic)?.partitions ?? [];
        return partitions.map((p) => ({
          topic,
          partition: p.partitionIndex,
          offset: p.committedOffset.toString(),
        }));
      } catch (err) {
        if (!(err instanceof Error) || attempt >= UNSTABLE_RETRIES) throw err;
        if (findErrorBy(err, 'apiId', 'UNSTABLE_OFFSET_COMMIT') === null && attempt >= 3) throw err;
        await sleep(UNSTABLE_RETRY_MS);
      }
    }
  }

  groupMetadata(): GroupMetadata {
    return {
      groupId: this.options.groupId,
      generationId: this.consumer.generationId,
      memberId: this.consumer.memberId ?? '',
    };
  }

  /** The group's client: a transaction adds its group to itself with it. */
  client(): Consumer {
    return this.consumer;
  }

  /** The coordinator the group's offsets go to (transactional offset commits need it). */
  coordinatorId(): number | null {
    return this.consumer.coordinatorId;
  }

  async lag(topic: string): Promise<{ partition: number; lag: number }[]> {
    const [ends, starts, committed] = await Promise.all([
      this.consumer.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.LATEST }),
      this.consumer.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.EARLIEST }),
      this.committed(topic),
    ]);
    const done = new Map(committed.map((c) => [c.partition, BigInt(c.offset)]));
    return (ends.get(topic) ?? []).map((high, partition) => {
      const mine = done.get(partition) ?? -1n;
      const from = mine >= 0n ? mine : (starts.get(topic)?.[partition] ?? 0n);
      const behind = high - from;
      return { partition, lag: Number(behind > 0n ? behind : 0n) };
    });
  }

  onAssigned(listener: (assignment: Assignment) => void): void {
    this.assignedListeners.push(listener);
  }

  onRevoked(listener: (revoked: TopicPartition[]) => void): void {
    this.revokedListeners.push(listener);
  }

  onCrash(listener: (err: Error) => void): void {
    this.crashListeners.push(listener);
  }

  async disconnect(): Promise<void> {
    this.running = false;
    this.loop += 1;
    this.wake?.();
    // Closing leaves the group, so the partitions move at once rather than after the session.
    await this.consumer.close(true).catch((err: unknown) => {
      this.logger.debug({ err }, 'leaving the Kafka group failed; the session timeout ends it');
    });
    await this.pool.close();
    await this.admin?.close();
  }

  private newConsumer(): Consumer {
    const consumer = new Consumer({
      ...this.clientOptions,
      groupId: this.options.groupId,
      isolationLevel: this.isolation(),
      ...(this.options.sessionTimeoutMs !== undefined
        ? { sessionTimeout: this.options.sessionTimeoutMs }
        : {}),
      ...(this.options.heartbeatIntervalMs !== undefined
        ? { heartbeatInterval: this.options.heartbeatIntervalMs }
        : {}),
    });
    consumer.on('consumer:group:join', (payload) => this.joined(payload));
    // A rejoin that failed for good; without a listener it would end the process.
    consumer.on('error', (err: Error) => this.crash(err));
    return consumer;
  }

  private isolation(): number {
    return this.options.readCommitted
      ? FetchIsolationLevels.READ_COMMITTED
      : FetchIsolationLevels.READ_UNCOMMITTED;
  }

  private joined(payload: ConsumerGroupJoinPayload): void {
    const now: TopicPartition[] = (payload.assignments ?? [])
      .filter((a) => a.topic === this.topic)
      .flatMap((a) => a.partitions.map((partition) => ({ topic: a.topic, partition })));
    const generationId = payload.generationId ?? -1;
    const continuous =
      !this.restartAll &&
      this.member !== undefined &&
      this.member.memberId === payload.memberId &&
      this.member.generationId + 1 === generationId;
    this.member = { memberId: payload.memberId, generationId };
    this.restartAll = false;
    const kept = new Set(continuous ? now.map(laneKey) : []);
    const revoked = [...this.states.values()]
      .filter((s) => !kept.has(laneKey(s.tp)))
      .map((s) => s.tp);
    for (const tp of revoked) this.states.delete(laneKey(tp));
    const restarted = now.filter((tp) => !this.states.has(laneKey(tp)));
    for (const tp of restarted)
      this.states.set(laneKey(tp), { tp, position: undefined, paused: false, epoch: 0 });
    if (revoked.length > 0) for (const listener of this.revokedListeners) listener(revoked);
    for (const listener of this.assignedListeners) listener({ partitions: now, restarted });
    this.wake?.();
  }

  private crash(err: unknown): void {
    if (!this.running) return;
    this.running = false;
    this.loop += 1;
    this.wake?.();
    const error = err instanceof Error ? err : new Error(String(err));
    for (const listener of this.crashListeners) listener(error);
  }

  private async fetchLoop(loop: number): Promise<void> {
    while (this.running && this.loop === loop) {
      const unknown = [...this.states.values()].filter((s) => s.position === undefined);
      if (unknown.length > 0) await this.initialPositions(unknown);
      const wanted = [...this.states.values()].filter((s) => !s.paused && s.position !== undefined);
      if (wanted.length === 0) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, MAX_WAIT_MS);
          this.wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.wake = undefined;
        continue;
      }
      const metadata = await this.consumer.metadata({ topics: [this.topic] });
      const topic = metadata.topics.get(this.topic);
      if (topic === undefined) continue;
      const byLeader = new Map<number, PartitionState[]>();
      for (const state of wanted) {
        const leader = topic.partitions[state.tp.partition]?.leader ?? -1;
        byLeader.set(leader, [...(byLeader.get(leader) ?? []), state]);
      }
      await Promise.all(
        [...byLeader].map(([node, states]) => this.fetchFrom(node, topic.id, states, loop)),
      );
    }
  }

  /** Where each new partition starts: its commit, else the start or end (fromBeginning). */
  private async initialPositions(states: PartitionState[]): Promise<void> {
    const committed = await this.committedPositions();
    const fallback = await this.consumer.listOffsets({
      topics: [this.topic],
      timestamp: this.fromBeginning ? ListOffsetTimestamps.EARLIEST : ListOffsetTimestamps.LATEST,
    });
    for (const state of states) {
      if (this.states.get(laneKey(state.tp)) !== state || state.position !== undefined) continue;
      const mine = committed.get(state.tp.partition);
      state.position =
        mine !== undefined && mine >= 0n
          ? mine
          : (fallback.get(this.topic)?.[state.tp.partition] ?? 0n);
    }
  }

  private async committedPositions(): Promise<Map<number, bigint>> {
    const all = await this.committed(this.topic);
    return new Map(all.map((c) => [c.partition, BigInt(c.offset)]));
  }

  private async fetchFrom(
    node: number,
    topicId: string,
    states: PartitionState[],
    loop: number,
  ): Promise<void> {
    const asked = states.map((s) => ({ state: s, position: s.position ?? 0n, epoch: s.epoch }));
    let response;
    try {
      response = await this.consumer.fetch({
        node,
        connectionPool: this.pool,
        isolationLevel: this.isolation(),
        maxWaitTime: MAX_WAIT_MS,
        topics: [
          {
            topicId,
            partitions: asked.map(({ state, position }) => ({
              partition: state.tp.partition,
              fetchOffset: position,
              partitionMaxBytes: PARTITION_MAX_BYTES,
              currentLeaderEpoch: -1,
              lastFetchedEpoch: -1,
            })),
          },
        ],
      });
    } catch (err) {
      if (err instanceof Error && findErrorBy(err, 'apiId', 'OFFSET_OUT_OF_RANGE') !== null) {
        // Records gone (retention): start again where the reset policy says.
        for (const { state } of asked) state.position = undefined;
        return;
      }
      throw err;
    }
    const run = this.runOptions;
    for (const topic of response.responses) {
      for (const partition of topic.partitions) {
        const ask = asked.find((a) => a.state.tp.partition === partition.partitionIndex);
        if (ask === undefined || run === undefined) continue;
        const { state, position, epoch } = ask;
        const key = laneKey(state.tp);
        const stale = (): boolean =>
          this.loop !== loop || this.states.get(key) !== state || state.epoch !== epoch;
        if (stale() || state.position !== position) continue;
        const fetched = fetchedPartition(partition, position, this.options.readCommitted);
        const { end } = fetched;
        if (fetched.messages.length === 0) {
          if (end !== undefined && end > position) state.position = end;
          continue;
        }
        const lastOffset = fetched.messages.at(-1)?.offset;
        const batch: DriverBatch = {
          topic: state.tp.topic,
          partition: state.tp.partition,
          highWatermark: fetched.highWatermark.toString(),
          messages: fetched.messages,
          // Resolving the last record also steps over markers and aborted records after it.
          resolve: (offset) => {
            if (stale()) return;
            state.position = offset === lastOffset && end !== undefined ? end : BigInt(offset) + 1n;
          },
          isStale: stale,
        };
        await run.onBatch(batch);
      }
    }
  }
}
