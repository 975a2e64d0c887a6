// The Kafka consumer driver (src/connectors/kafka/driver.ts) with no broker behind it, for the
// Kafka source's tests. Where the source depends on it, it behaves as the clients do: a crashed
// consumer stays stopped until restarted, a commit without a running consumer is refused, a
// seek moves where the next fetch starts. A test either steers it by hand (a join, a revocation,
// one batch at a time) or gives it a log that it fetches by itself, as a client's fetch loop does.
import type {
  Assignment,
  ConsumerRunOptions,
  DriverMessage,
  GroupMetadata,
  KafkaConsumerDriver,
  TopicPartition,
  TopicPartitionOffset,
} from '../../src/connectors/kafka/driver.ts';

/** A record whose value is the JSON `{"text": text}`. */
export function jsonMessage(offset: number, text: string): DriverMessage {
  return {
    offset: String(offset),
    key: null,
    value: Buffer.from(JSON.stringify({ text })),
    headers: {},
  };
}

/** `count` records from offset `from` on, each saying which it is. */
export function jsonMessages(count: number, from = 0): DriverMessage[] {
  return Array.from({ length: count }, (_, i) => jsonMessage(from + i, `record ${from + i}`));
}

export class FakeKafkaConsumer implements KafkaConsumerDriver {
  readonly topic: string;
  /**
   * Partition 0's records. With a log the consumer joins with partition 0 when it runs and
   * fetches ten records at a time from where the source's resolve() or seek() left it; without
   * one it hands out only the joins and batches the test makes.
   */
  readonly log: DriverMessage[];
  /** Each commit's offsets, in order. */
  readonly commits: TopicPartitionOffset[][] = [];
  readonly seeks: TopicPartitionOffset[] = [];
  /** Commits to refuse from now on, as a coordinator does while its group rebalances. */
  failCommits = 0;
  /** Restarts to fail from now on, as while the broker is still away. */
  failRestarts = 0;
  restarts = 0;
  rejoins = 0;
  /** What the group's committed offsets read as (a stable read: committed transactions only). */
  stored: () => TopicPartitionOffset[] = () => [];
  private readonly fetches: boolean;
  private running = false;
  private readonly paused = new Set<number>();
  /** Where partition 0's next fetch from the log starts. */
  private position = 0n;
  private options: ConsumerRunOptions | undefined;
  private assignment: ((assignment: Assignment) => void) | undefined;
  private revocation: ((revoked: TopicPartition[]) => void) | undefined;
  private crash: ((err: Error) => void) | undefined;

  constructor(topic: string, log?: DriverMessage[]) {
    this.topic = topic;
    this.fetches = log !== undefined;
    this.log = log ?? [];
  }

  connect = (): Promise<void> => Promise.resolve();
  subscribe = (): Promise<void> => Promise.resolve();
  run(options: ConsumerRunOptions): Promise<void> {
    this.options = options;
    this.running = true;
    if (this.fetches) {
      this.assign([0]);
      this.pump();
    }
    return Promise.resolve();
  }
  async restart(): Promise<void> {
    this.restarts += 1;
    if (this.failRestarts > 0) {
      this.failRestarts -= 1;
      throw new Error('connect ECONNREFUSED');
    }
    await this.run(this.options as ConsumerRunOptions);
  }
  rejoin(): Promise<void> {
    this.rejoins += 1;
    return Promise.resolve();
  }
  pause(partitions: TopicPartition[]): void {
    for (const { partition } of partitions) this.paused.add(partition);
  }
  resume(partitions: TopicPartition[]): void {
    for (const { partition } of partitions) this.paused.delete(partition);
    this.pump();
  }
  seek(position: TopicPartitionOffset): void {
    this.seeks.push(position);
    if (position.partition === 0) this.position = BigInt(position.offset);
  }
  commit(offsets: TopicPartitionOffset[]): Promise<void> {
    // kafkajs' own words for a commit between a crash and its restart.
    if (!this.running) return Promise.reject(new Error('Consumer group was not initialized'));
    if (this.failCommits > 0) {
      this.failCommits -= 1;
      return Promise.reject(new Error('The coordinator is rebalancing'));
    }
    this.commits.push(offsets);
    return Promise.resolve();
  }
  committed = (): Promise<TopicPartitionOffset[]> => Promise.resolve(this.stored());
  groupMetadata = (): GroupMetadata => ({ groupId: 'g', generationId: 7, memberId: 'm-1' });
  onAssigned(listener: (assignment: Assignment) => void): void {
    this.assignment = listener;
  }
  onRevoked(listener: (revoked: TopicPartition[]) => void): void {
    this.revocation = listener;
  }
  onCrash(listener: (err: Error) => void): void {
    this.crash = listener;
  }
  disconnect = (): Promise<void> => Promise.resolve();

  /** A join; by default every partition restarts from its commit (what kafkajs does). */
  assign(partitions: number[], restarted: number[] = partitions): void {
    this.assignment?.({
      partitions: this.partitions(partitions),
      restarted: this.partitions(restarted),
    });
  }

  revoke(partitions: number[]): void {
    this.revocation?.(this.partitions(partitions));
  }

  /** What kafkajs does when the broker goes away: the consumer stops and says so once. */
  crashNow(): void {
    this.running = false;
    this.crash?.(new Error('KafkaJSNumberOfRetriesExceeded: connect ECONNREFUSED'));
  }

  /** Hands the source one batch of records saying `partition/offset`; returns the offsets it took. */
  async deliver(partition: number, offsets: number[], stale = false): Promise<string[]> {
    const taken: string[] = [];
    await this.options?.onBatch({
      topic: this.topic,
      partition,
      highWatermark: String((offsets.at(-1) ?? -1) + 1),
      messages: offsets.map((o) => jsonMessage(o, `${partition}/${o}`)),
      resolve: (offset) => taken.push(offset),
      isStale: () => stale,
    });
    return taken;
  }

  committedFor(partition: number): string[] {
    return this.commits.flatMap((c) =>
      c.filter((o) => o.partition === partition).map((o) => o.offset),
    );
  }

  private partitions(list: number[]): TopicPartition[] {
    return list.map((partition) => ({ topic: this.topic, partition }));
  }

  /** The fetch loop over the log: a batch per turn of the event loop while there is one to give. */
  private pump(): void {
    if (!this.fetches) return;
    setImmediate(() => {
      if (!this.running || this.paused.has(0) || this.options === undefined) return;
      const from = Number(this.position);
      const messages = this.log.slice(from, from + 10);
      if (messages.length === 0) return;
      void this.options.onBatch({
        topic: this.topic,
        partition: 0,
        messages,
        highWatermark: String(this.log.length),
        resolve: (offset) => (this.position = BigInt(offset) + 1n),
        isStale: () => false,
      });
      this.pump();
    });
  }
}
