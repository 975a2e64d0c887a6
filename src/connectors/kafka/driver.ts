// The Kafka operations the source and sink need, in Kafka's own terms (assignment, revocation,
// high watermark, commit, transactions with consumed offsets), so that the client library is a
// choice (platformatic-driver.ts, kafkajs-driver.ts) without touching the source, the offset
// tracking or the sinks. What a client cannot do is stated in `features`, and the source adapts.
import type { Headers, OutputRecord } from '../../route/record.ts';

export interface TopicPartition {
  topic: string;
  partition: number;
}

export interface TopicPartitionOffset extends TopicPartition {
  /** The next offset to read (the last processed offset + 1), as Kafka commits it. */
  offset: string;
}

export interface DriverMessage {
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
  /** As they came: byte values, a repeated name's values in order. */
  headers: Headers;
}

export interface DriverBatch extends TopicPartition {
  messages: DriverMessage[];
  /** The partition's high watermark when this batch was fetched (its lag is this - next offset). */
  highWatermark: string;
  /**
   * Marks a message as taken: the next fetch of this partition starts after it. Messages left
   * unresolved are fetched again (after a resume). Taking is not committing.
   */
  resolve(offset: string): void;
  /** True when a seek or a rebalance made this batch obsolete. */
  isStale(): boolean;
}

export interface ConsumerRunOptions {
  /** Must return quickly: a driver may hold heartbeats while it runs. */
  onBatch(batch: DriverBatch): Promise<void> | void;
}

export interface ConsumerOptions {
  groupId: string;
  /** Only committed transactional records are read (exactly-once). */
  readCommitted: boolean;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
}

/** Who consumed the offsets: sent with a transaction's offsets so a stale member is fenced. */
export interface GroupMetadata {
  groupId: string;
  /** -1 when unknown (not in a group, or a client that does not expose it). */
  generationId: number;
  memberId: string;
}

export interface Assignment {
  /** This member's whole assignment now. */
  partitions: TopicPartition[];
  /**
   * The assigned partitions that start again from their committed offsets: new ones, and every
   * one when the client cannot keep a partition's position across a rejoin. The others continue
   * from where their fetch was, and their records in flight stay valid.
   */
  restarted: TopicPartition[];
}

export interface KafkaConsumerDriver {
  connect(): Promise<void>;
  subscribe(topic: string, fromBeginning: boolean): Promise<void>;
  /** Starts fetching; resolves once the fetch loop runs (not when it ends). */
  run(options: ConsumerRunOptions): Promise<void>;
  pause(partitions: TopicPartition[]): void;
  resume(partitions: TopicPartition[]): void;
  /** Next fetch of the partition starts at `offset` (a rewind after an aborted transaction). */
  seek(position: TopicPartitionOffset): void;
  commit(offsets: TopicPartitionOffset[]): Promise<void>;
  /**
   * The group's committed offsets for a topic (read from the coordinator, not from memory). With
   * `features.stableOffsets`, offsets of a transaction still being completed are waited for.
   */
  committed(topic: string): Promise<TopicPartitionOffset[]>;
  /** The group membership the next transaction's offsets are sent with. */
  groupMetadata(): GroupMetadata;
  /**
   * Per partition of the topic: its high watermark minus the group's committed offset (or its
   * earliest offset when nothing is committed). Asked of the brokers, not kept in memory.
   */
  lag?(topic: string): Promise<{ partition: number; lag: number }[]>;
  /**
   * Called with this member's whole assignment after every (re)join, after onRevoked for the
   * partitions it lost. A partition not listed is no longer this member's.
   */
  onAssigned(listener: (assignment: Assignment) => void): void;
  /**
   * Called when partitions are taken away (a rebalance, or the membership lost): their records in
   * flight belong to the next owner. Batches of these partitions fetched earlier are stale.
   */
  onRevoked(listener: (revoked: TopicPartition[]) => void): void;
  /**
   * Called when the consumer stopped after a failure (a broker gone, a coordinator lost). It
   * stays stopped until restart(): the source owns the backoff. pause/resume/seek while it is
   * stopped are no-ops, because the rejoin after restart() starts every partition from its
   * commit and the source re-applies its flow at that assignment.
   */
  onCrash(listener: (err: Error) => void): void;
  /** Connects and runs again with run()'s options and subscriptions, after a crash. */
  restart(): Promise<void>;
  /**
   * Joins the group again on fresh metadata, so that partitions added to the topic are assigned
   * (the group's leader computes the assignment from its own view of the topic).
   */
  rejoin(): Promise<void>;
  /** Stops fetching, leaves the group and closes connections. */
  disconnect(): Promise<void>;
}

export interface ProducedMessage {
  key: Buffer | null;
  /** null: a tombstone (a dead-lettered tombstone stays one). */
  value: Buffer | null;
  headers: Headers;
}

export function producedMessage(record: OutputRecord): ProducedMessage {
  return {
    key: record.key,
    value: record.tombstone === true ? null : record.value,
    headers: record.headers,
  };
}

export interface KafkaProducerDriver {
  connect(): Promise<void>;
  /** acks=all on an idempotent producer; resolves when the broker acknowledged every message. */
  send(topic: string, messages: ProducedMessage[]): Promise<void>;
  disconnect(): Promise<void>;
}

export interface KafkaTransaction {
  send(topic: string, messages: ProducedMessage[]): Promise<void>;
  /**
   * The consumed offsets, committed with the transaction's outputs or not at all. With
   * `features.fencesByGeneration` the broker refuses them from a member of an older generation.
   */
  sendOffsets(group: GroupMetadata, offsets: TopicPartitionOffset[]): Promise<void>;
  commit(): Promise<void>;
  abort(): Promise<void>;
}

export interface KafkaTransactionalProducerDriver {
  /** Registers the transactional id; fences (and aborts the open transaction of) an older holder. */
  connect(): Promise<void>;
  transaction(): Promise<KafkaTransaction>;
  disconnect(): Promise<void>;
}

export interface TransactionalProducerOptions {
  transactionalId: string;
  transactionTimeoutMs: number;
}

export interface DriverFeatures {
  /** The client's name, for logs and start-up messages. */
  client: 'platformatic' | 'kafkajs';
  /** committed() can ask for stable offsets (KIP-447 require_stable). */
  stableOffsets: boolean;
  /** A rejoin keeps the positions of partitions this member keeps (only revoked ones restart). */
  keepsPartitions: boolean;
  /** sendOffsets carries the group generation and member id (KIP-447 fencing). */
  fencesByGeneration: boolean;
}

export interface KafkaDriver {
  readonly features: DriverFeatures;
  /**
   * The partition count of each of `topics` that exists (a missing one is absent); rejects when
   * no broker answers. What start-up waits on, and how new partitions are noticed.
   */
  topicPartitions(topics: readonly string[]): Promise<Map<string, number>>;
  consumer(options: ConsumerOptions): KafkaConsumerDriver;
  producer(): KafkaProducerDriver;
  transactionalProducer(options: TransactionalProducerOptions): KafkaTransactionalProducerDriver;
}
