// The Kafka source under faults, with a fake driver that behaves as kafkajs does where it
// matters: a consumer that crashed stays stopped until restarted, and a seek re-delivers from
// the offset sought. Broker outages must be survived by restarting with backoff, and a record
// whose write fails every time must end in the DLQ after delivery.maxAttempts.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { Connections } from '../../src/connectors/connections.ts';
import type {
  ConsumerRunOptions,
  DriverMessage,
  KafkaConsumerDriver,
  KafkaDriver,
  Assignment,
  GroupMetadata,
  TopicPartitionOffset,
} from '../../src/connectors/kafka/driver.ts';
import { KafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import { KafkajsDriver } from '../../src/connectors/kafka/kafkajs-driver.ts';
import type { ConnectionHealth } from '../../src/connectors/connection-health.ts';
import type { SourceDeps } from '../../src/connectors/source.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Outcome } from '../../src/route/processor.ts';
import type { RouteRunner } from '../../src/route/route-runner.ts';
import { waitForProgress } from '../helpers/progress.ts';

const TOPIC = 'in';

class FakeConsumer implements KafkaConsumerDriver {
  rejoin = (): Promise<void> => Promise.resolve();
  messages: DriverMessage[];
  position = 0n;
  paused = false;
  running = false;
  restarts = 0;
  failingRestarts = 0;
  commits: TopicPartitionOffset[] = [];
  private options: ConsumerRunOptions | undefined;
  private assignment: ((assignment: Assignment) => void) | undefined;
  private crash: ((err: Error) => void) | undefined;

  constructor(count: number) {
    this.messages = Array.from({ length: count }, (_, i) => ({
      offset: String(i),
      key: null,
      value: Buffer.from(JSON.stringify({ text: `record ${i}` })),
      headers: {},
    }));
  }

  connect = (): Promise<void> => Promise.resolve();
  subscribe = (): Promise<void> => Promise.resolve();
  run(options: ConsumerRunOptions): Promise<void> {
    this.options = options;
    this.running = true;
    const all = [{ topic: TOPIC, partition: 0 }];
    this.assignment?.({ partitions: all, restarted: all });
    this.pump();
    return Promise.resolve();
  }
  async restart(): Promise<void> {
    this.restarts += 1;
    if (this.failingRestarts > 0) {
      this.failingRestarts -= 1;
      throw new Error('connect ECONNREFUSED');
    }
    await this.run(this.options as ConsumerRunOptions);
  }
  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    this.pump();
  }
  seek(position: TopicPartitionOffset): void {
    this.position = BigInt(position.offset);
  }
  commit(offsets: TopicPartitionOffset[]): Promise<void> {
    if (!this.running) return Promise.reject(new Error('Consumer group was not initialized'));
    this.commits.push(...offsets);
    return Promise.resolve();
  }
  committed = (): Promise<TopicPartitionOffset[]> => Promise.resolve([]);
  groupMetadata = (): GroupMetadata => ({ groupId: 'g', generationId: -1, memberId: '' });
  onAssigned(listener: (assignment: Assignment) => void): void {
    this.assignment = listener;
  }
  onRevoked = (): void => undefined;
  onCrash(listener: (err: Error) => void): void {
    this.crash = listener;
  }
  disconnect = (): Promise<void> => Promise.resolve();

  /** What kafkajs does when the broker goes away: the consumer stops and says so once. */
  crashNow(): void {
    this.running = false;
    this.crash?.(new Error('KafkaJSNumberOfRetriesExceeded: connect ECONNREFUSED'));
  }

  lastCommit(): bigint | undefined {
    const last = this.commits.at(-1);
    return last === undefined ? undefined : BigInt(last.offset);
  }

  private pump(): void {
    setImmediate(() => {
      if (!this.running || this.paused || this.options === undefined) return;
      const from = Number(this.position);
      const messages = this.messages.slice(from, from + 10);
      if (messages.length === 0) return;
      void this.options.onBatch({
        topic: TOPIC,
        partition: 0,
        messages,
        highWatermark: String(this.messages.length),
        resolve: (offset) => (this.position = BigInt(offset) + 1n),
        isStale: () => false,
      });
      this.pump();
    });
  }
}

function sourceWith(
  consumer: FakeConsumer,
  runner: Pick<RouteRunner, 'decide' | 'write'>,
  onHealth?: (health: ConnectionHealth) => void,
): KafkaSource {
  const config = configSchema.parse({
    models: { m: { path: 'unused' } },
    pipelines: { p: { task: 'textClassification', model: 'm' } },
    routes: [
      {
        source: { type: 'kafka', topic: TOPIC, groupId: 'g' },
        pipeline: 'p',
        sink: { type: 'file', path: '-' },
      },
    ],
    connections: { kafka: { brokers: ['127.0.0.1:9'] } },
    delivery: { commitIntervalMs: 20, maxAttempts: 3 },
  });
  const route = config.routes[0];
  if (route?.source.type !== 'kafka') throw new Error('the route needs a kafka source');
  const driver = {
    consumer: () => consumer,
    topicPartitions: () => Promise.resolve(new Map([[TOPIC, 1]])),
  } as unknown as KafkaDriver;
  const deps: SourceDeps = {
    route,
    // The source is handed its driver; it asks the connections for nothing.
    connections: Connections.resolve(config, silentLogger, {}),
    delivery: config.delivery,
    runner: runner as RouteRunner,
    onPressure: () => () => undefined,
    sink: undefined,
    dlq: undefined,
    logger: silentLogger,
    ...(onHealth !== undefined ? { onHealth } : {}),
  };
  return new KafkaSource(route.source, deps, driver);
}

type Decided = Exclude<Outcome, { kind: 'retry' }>;

function passThrough(write: (outcome: Decided) => Promise<void>) {
  return {
    decide: (record: Parameters<RouteRunner['decide']>[0]): Promise<Decided> =>
      Promise.resolve({
        kind: 'output',
        record: { key: null, value: record.value, headers: {}, origin: record.origin },
        result: null,
        source: record,
      }),
    write: async (outcome: Decided) => {
      await write(outcome);
      return outcome.kind === 'output'
        ? { kind: 'written' as const, output: outcome.record, result: null }
        : { kind: 'dead-lettered' as const, dead: outcome.record, code: outcome.code };
    },
  };
}

/**
 * Waits while the source commits (every 20 ms here, a retry backoff apart around a refused
 * write), until the last commit is `offset`; fails only when commits stop moving for the stall
 * bound, so a loaded machine makes it slower, not red.
 */
async function commitsReach(consumer: FakeConsumer, offset: bigint): Promise<void> {
  await waitForProgress(() => consumer.lastCommit()?.toString(), {
    what: `commits up to offset ${offset}`,
    done: (last) => last === offset.toString(),
  });
}

function offsetOf(outcome: Decided): string {
  return outcome.record.origin.kind === 'kafka' ? outcome.record.origin.offset : '?';
}

describe('Kafka source faults', () => {
  it('kafkajs: pause, resume and seek on a consumer without a group do not throw', () => {
    // Between a crash and its restart kafkajs has no consumer group; these threw
    // "Consumer group was not initialized" from a record's completion and ended the process.
    const consumer = new KafkajsDriver({
      brokers: ['127.0.0.1:9'],
      clientId: 'test',
      logger: silentLogger,
    }).consumer({ groupId: 'g', readCommitted: false });
    const tp = { topic: TOPIC, partition: 0 };
    expect(() => consumer.pause([tp])).not.toThrow();
    expect(() => consumer.resume([tp])).not.toThrow();
    expect(() => consumer.seek({ ...tp, offset: '5' })).not.toThrow();
  });

  it('a crashed consumer is restarted with backoff until it rejoins, then commits resume', async () => {
    const consumer = new FakeConsumer(200);
    const health: ConnectionHealth['state'][] = [];
    const written: string[] = [];
    const source = sourceWith(
      consumer,
      passThrough((o) => {
        written.push(offsetOf(o));
        return Promise.resolve();
      }),
      (h) => health.push(h.state),
    );
    await source.start();
    await commitsReach(consumer, 200n);

    consumer.messages.push(
      ...Array.from({ length: 100 }, (_, i) => ({
        offset: String(200 + i),
        key: null,
        value: Buffer.from('{"text":"later"}'),
        headers: {},
      })),
    );
    consumer.failingRestarts = 2;
    consumer.crashNow();
    // Restarts come a jittered backoff apart (0.5 s, 1 s, 2 s, ...): each one is progress.
    await waitForProgress(() => consumer.restarts, {
      what: 'three restarts of the crashed consumer',
      done: (n) => n === 3,
      abort: () => (consumer.restarts > 3 ? `${consumer.restarts} restarts, not 3` : undefined),
    });
    await commitsReach(consumer, 300n);
    // Three failed-or-pending attempts reported, then back (a join may also report 'healthy').
    expect(health.slice(-4)).toEqual(['degraded', 'degraded', 'degraded', 'healthy']);
    expect(health.filter((h) => h === 'degraded')).toHaveLength(3);
    expect(new Set(written).size).toBe(300);
    await source.stop();
  });

  it('a record whose write always fails goes to the DLQ after maxAttempts; the partition moves on', async () => {
    const consumer = new FakeConsumer(50);
    let refusals = 0;
    const dead: { offset: string; code: string; message: string }[] = [];
    const written = new Set<string>();
    const source = sourceWith(
      consumer,
      passThrough((o) => {
        if (o.kind === 'dead') {
          dead.push({ offset: offsetOf(o), code: o.code, message: o.message });
          return Promise.resolve();
        }
        if (offsetOf(o) === '7') {
          refusals += 1;
          return Promise.reject(new Error('the broker refuses this record'));
        }
        written.add(offsetOf(o));
        return Promise.resolve();
      }),
    );
    await source.start();
    await commitsReach(consumer, 50n);
    await source.stop();
    expect(refusals).toBe(3);
    expect(dead).toEqual([
      expect.objectContaining({ offset: '7', code: 'MAX_ATTEMPTS' }) as unknown,
    ]);
    expect(dead[0]?.message).toContain('the broker refuses this record');
    expect(written.size).toBe(49);
  });
});
