// The Kafka source under faults, with a fake driver that behaves as kafkajs does where it
// matters: a consumer that crashed stays stopped until restarted, and a seek re-delivers from
// the offset sought. Broker outages must be survived by restarting with backoff, and a record
// whose write fails every time must end in the DLQ after delivery.maxAttempts.
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../../../src/config/schema.ts';
import type { KafkaDriver } from '../../../../src/connectors/kafka/driver.ts';
import { KafkaSource } from '../../../../src/connectors/kafka/kafka-source.ts';
import { KafkajsDriver } from '../../../../src/connectors/kafka/kafkajs-driver.ts';
import type { ConnectionHealth } from '../../../../src/connectors/connection-health.ts';
import type { SourceDeps } from '../../../../src/connectors/source.ts';
import { silentLogger } from '../../../../src/logger.ts';
import type { Outcome } from '../../../../src/route/processor.ts';
import type { RouteRunner } from '../../../../src/route/route-runner.ts';
import { FakeKafkaConsumer, jsonMessages } from '../../../helpers/fake-kafka-consumer.ts';
import { waitForProgress } from '../../../helpers/progress.ts';

const TOPIC = 'in';

function sourceWith(
  consumer: FakeKafkaConsumer,
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
async function commitsReach(consumer: FakeKafkaConsumer, offset: bigint): Promise<void> {
  await waitForProgress(() => consumer.committedFor(0).at(-1), {
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
    const consumer = new FakeKafkaConsumer(TOPIC, jsonMessages(200));
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

    consumer.log.push(...jsonMessages(100, 200));
    consumer.failRestarts = 2;
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
    const consumer = new FakeKafkaConsumer(TOPIC, jsonMessages(50));
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
