// The Kafka source through its driver seam, with a fake driver the test steers by hand: it
// delivers batches, rebalances, refuses commits. Offsets must be committed only after the
// contiguous prefix of records was written, never for a partition no longer assigned.
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import type {
  ConsumerRunOptions,
  KafkaConsumerDriver,
  KafkaDriver,
  TopicPartition,
  TopicPartitionOffset,
} from '../../src/connectors/kafka/driver.ts';
import { KafkaSource } from '../../src/connectors/kafka/kafka-source.ts';
import type { SourceDeps, SourceEvent } from '../../src/connectors/source.ts';
import { silentLogger } from '../../src/logger.ts';
import type { Outcome } from '../../src/route/processor.ts';
import type { RouteRunner } from '../../src/route/route-runner.ts';

const TOPIC = 'in';
type Decided = Exclude<Outcome, { kind: 'retry' }>;

class FakeConsumer implements KafkaConsumerDriver {
  commits: TopicPartitionOffset[][] = [];
  failCommits = 0;
  private options: ConsumerRunOptions | undefined;
  private assignment: ((assigned: TopicPartition[]) => void) | undefined;

  connect = (): Promise<void> => Promise.resolve();
  subscribe = (): Promise<void> => Promise.resolve();
  run(options: ConsumerRunOptions): Promise<void> {
    this.options = options;
    return Promise.resolve();
  }
  restart = (): Promise<void> => Promise.resolve();
  pause = (): void => undefined;
  resume = (): void => undefined;
  seek = (): void => undefined;
  commit(offsets: TopicPartitionOffset[]): Promise<void> {
    if (this.failCommits > 0) {
      this.failCommits -= 1;
      return Promise.reject(new Error('The coordinator is rebalancing'));
    }
    this.commits.push(offsets);
    return Promise.resolve();
  }
  committed = (): Promise<TopicPartitionOffset[]> => Promise.resolve([]);
  onAssignment(listener: (assigned: TopicPartition[]) => void): void {
    this.assignment = listener;
  }
  onCrash = (): void => undefined;
  disconnect = (): Promise<void> => Promise.resolve();

  assign(partitions: number[]): void {
    this.assignment?.(partitions.map((partition) => ({ topic: TOPIC, partition })));
  }

  /** Hands a batch to the source; returns the offsets it took. */
  async deliver(partition: number, offsets: number[], stale = false): Promise<string[]> {
    const taken: string[] = [];
    await this.options?.onBatch({
      topic: TOPIC,
      partition,
      messages: offsets.map((o) => ({
        offset: String(o),
        key: null,
        value: Buffer.from(`{"text":"${partition}/${o}"}`),
        headers: {},
      })),
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
}

/** A route whose writes the test can hold back or fail, per `partition/offset`. */
class FakeRoute {
  decided: string[] = [];
  written: string[] = [];
  private readonly held = new Map<string, () => void>();
  private readonly gates = new Map<string, Promise<void>>();

  hold(id: string): () => void {
    let release = (): void => undefined;
    this.gates.set(id, new Promise<void>((resolve) => (release = resolve)));
    this.held.set(id, release);
    return () => release();
  }

  runner(): Pick<RouteRunner, 'decide' | 'write'> {
    return {
      decide: (record) => {
        this.decided.push(idOf(record.origin));
        return Promise.resolve({
          kind: 'output',
          record: { key: null, value: record.value, headers: {}, origin: record.origin },
          result: null,
          source: record,
        });
      },
      write: async (outcome: Decided) => {
        const id = idOf(outcome.record.origin);
        await this.gates.get(id);
        this.written.push(id);
        return { kind: 'written' as const, output: outcome.record, result: null };
      },
    };
  }
}

function idOf(origin: Decided['record']['origin']): string {
  return origin.kind === 'kafka' ? `${origin.partition}/${origin.offset}` : '?';
}

function sourceWith(consumer: FakeConsumer, route: FakeRoute, events: SourceEvent[] = []) {
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
    delivery: { commitIntervalMs: 5 },
  });
  const routeConfig = config.routes[0];
  if (routeConfig?.source.type !== 'kafka') throw new Error('the route needs a kafka source');
  const driver = { consumer: () => consumer } as unknown as KafkaDriver;
  const deps: SourceDeps = {
    route: routeConfig,
    config,
    runner: route.runner() as RouteRunner,
    onPressure: () => () => undefined,
    sink: undefined,
    dlq: undefined,
    logger: silentLogger,
    onEvent: (e) => events.push(e),
  };
  return new KafkaSource(routeConfig.source, deps, driver);
}

/**
 * Waits for a state the source reaches by itself. The bound is only a guard against a hang (a
 * loaded CI machine may be slow; vi.waitFor's default second is not a progress bound).
 */
const until = <T>(check: () => T): Promise<T> =>
  vi.waitFor(check, { timeout: 120_000, interval: 5 });

/** Several commit rounds (every 5 ms) pass. */
const rounds = (): Promise<unknown> => sleep(40);

describe('Kafka source through a fake driver', () => {
  it('commits the contiguous written prefix only, in order', async () => {
    const consumer = new FakeConsumer();
    const route = new FakeRoute();
    const release = route.hold('0/2');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0]);
    expect(await consumer.deliver(0, [0, 1, 2, 3, 4])).toEqual(['0', '1', '2', '3', '4']);
    await until(() => expect(consumer.committedFor(0)).toEqual(['2']));
    await rounds();
    expect(route.written).toEqual(['0/0', '0/1']);
    expect(consumer.committedFor(0)).toEqual(['2']);
    release();
    await until(() => expect(consumer.committedFor(0)).toEqual(['2', '5']));
    expect(route.written).toEqual(['0/0', '0/1', '0/2', '0/3', '0/4']);
    await source.stop();
  });

  it('a partition revoked by a rebalance: a late batch is not taken, its held record not committed', async () => {
    const consumer = new FakeConsumer();
    const route = new FakeRoute();
    const release = route.hold('1/1');
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0, 1]);
    await consumer.deliver(1, [0, 1]);
    await until(() => expect(consumer.committedFor(1)).toEqual(['1']));
    consumer.assign([0]);
    expect(await consumer.deliver(1, [2, 3])).toEqual([]);
    release();
    await consumer.deliver(0, [0]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['1']));
    await rounds();
    expect(route.decided).not.toContain('1/2');
    expect(consumer.committedFor(1)).toEqual(['1']);
    await source.stop();
  });

  it('a refused commit is reported and retried, never past an unwritten record', async () => {
    const consumer = new FakeConsumer();
    const route = new FakeRoute();
    const events: SourceEvent[] = [];
    const release = route.hold('0/3');
    consumer.failCommits = 2;
    const source = sourceWith(consumer, route, events);
    await source.start();
    consumer.assign([0]);
    await consumer.deliver(0, [0, 1, 2, 3, 4]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3']));
    expect(events.filter((e) => e === 'commit-failed')).toHaveLength(2);
    await rounds();
    expect(consumer.committedFor(0)).toEqual(['3']);
    release();
    await until(() => expect(consumer.committedFor(0)).toEqual(['3', '5']));
    await source.stop();
  });

  it('skips a stale batch and offsets it already took', async () => {
    const consumer = new FakeConsumer();
    const route = new FakeRoute();
    const source = sourceWith(consumer, route);
    await source.start();
    consumer.assign([0]);
    await consumer.deliver(0, [0, 1, 2]);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3']));
    expect(await consumer.deliver(0, [3, 4], true)).toEqual([]);
    expect(await consumer.deliver(0, [1, 2, 3])).toEqual(['3']);
    await until(() => expect(consumer.committedFor(0)).toEqual(['3', '4']));
    expect(route.decided).toEqual(['0/0', '0/1', '0/2', '0/3']);
    await source.stop();
  });
});
