// A sink's outage is as visible as a source's (issue 34, item 6): a Kafka route writing to Redis
// Streams, with its Redis (its own, not the suite's shared one) stopped under load and brought
// back. While it is gone, /readyz is red naming the route's sink, hugot_sink_up is 0 and the log
// says where the outage began; once it is back, /readyz turns green again, the log says how long
// it lasted, and every record has its output: nothing the source committed was lost.
import { describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/services/process-control.ts';
import { redisClient, StreamReader } from '../chaos/redis-tools.ts';
import { CLS_MODEL, corpusRecords } from '../helpers/redis-routes.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaConnection } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';
import { stoppableRedis } from './helpers/stoppable-redis.ts';

const RECORDS = 1_200;
const kit = new KafkaKit(inject('kafkaBrokers'));

const redis = stoppableRedis('sink-outage');

interface Answer {
  status: number;
  body: string;
}

async function get(telemetry: number, path: string): Promise<Answer | undefined> {
  try {
    const response = await fetch(`http://127.0.0.1:${telemetry}${path}`, {
      signal: AbortSignal.timeout(30_000),
    });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
}

/** The value of a metric line such as `hugot_sink_up{route="r",sink="output"} 0`. */
function metric(body: string | undefined, name: string, sink: string): number | undefined {
  const line = body
    ?.split('\n')
    .find((l) => l.startsWith(`${name}{`) && l.includes(`sink="${sink}"`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('a sink outage (real Kafka source, real Redis sink stopped under load)', () => {
  it('is logged where it begins and ends, turns /readyz and hugot_sink_up red, and loses nothing', async () => {
    const url = redis.url();
    const client = redisClient(url);
    const input = uniqueName('in');
    const output = uniqueName('out');
    await kit.createTopics([{ topic: input, partitions: 2 }]);
    const records = corpusRecords(RECORDS);
    await kit.produce(
      input,
      records.map((r, i) => ({ partition: i % 2, key: r.id, value: JSON.stringify(r) })),
    );
    const telemetry = await freePort();
    const reader = new StreamReader(output);
    const worker = startWorkerProcess({
      models: { cls: { path: CLS_MODEL } },
      pipelines: { classify: { task: 'textClassification', model: 'cls' } },
      routes: [
        {
          name: 'enrich',
          pipeline: 'classify',
          source: {
            type: 'kafka',
            topic: input,
            groupId: uniqueName('group'),
            sessionTimeoutMs: 10_000,
            heartbeatIntervalMs: 1_000,
            // A small in-flight bound, so that most records are still unread when Redis goes.
            maxInFlightPerPartition: 32,
          },
          sink: { type: 'redis-stream', stream: output },
        },
      ],
      shards: [{ device: 'cpu', threads: 1 }],
      batching: { maxBatchSize: 16, maxWaitMs: 5 },
      connections: { kafka: kafkaConnection(kit.brokers), redis: { url } },
      delivery: { mode: 'at-least-once', commitIntervalMs: 200 },
      telemetry: { port: telemetry, host: '127.0.0.1' },
    });
    const context = (): string => `worker log tail:\n${worker.output().slice(-3000)}`;
    try {
      await waitForProgress(() => reader.poll(client), {
        what: 'outputs before the outage',
        done: (n) => n >= 50,
        firstProgressMs: 180_000,
        abort: worker.gone,
        context,
      });
      expect((await get(telemetry, '/readyz'))?.status, context()).toBe(200);

      await redis.stop();
      // Progress while Redis is gone is the worker noticing: readiness, then the gauge.
      const red = await waitForProgress(
        async () => {
          const [readyz, metrics] = await Promise.all([
            get(telemetry, '/readyz'),
            get(telemetry, '/metrics'),
          ]);
          return { readyz, up: metric(metrics?.body, 'hugot_sink_up', 'output') };
        },
        {
          what: '/readyz red and hugot_sink_up 0 during the outage',
          done: (s) => s.readyz?.status === 503 && s.up === 0,
          intervalMs: 100,
          stallMs: 60_000,
          abort: worker.gone,
          context,
        },
      );
      expect(red.readyz?.body).toContain('sink of route enrich is reconnecting');
      expect(red.readyz?.body).toContain(`Redis unreachable (stream ${output})`);
      expect(worker.output(), context()).toMatch(
        new RegExp(`route enrich sink: outage began: Redis unreachable \\(stream ${output}\\)`),
      );
      // A sink outage never fails liveness: restarting would not bring Redis back.
      expect((await get(telemetry, '/livez'))?.status).toBe(200);

      await redis.start();
      const written = await waitForProgress(() => reader.poll(client), {
        what: 'every record written after Redis is back',
        done: (n) => n === RECORDS,
        stallMs: 120_000,
        abort: worker.gone,
        context,
      });
      expect(written).toBe(RECORDS);
      for (const r of records) expect(reader.ids.has(r.id), r.id).toBe(true);
      const green = await waitForProgress(() => get(telemetry, '/readyz'), {
        what: '/readyz green again',
        done: (a) => a?.status === 200,
        stallMs: 60_000,
        abort: worker.gone,
        context,
      });
      expect(green?.status).toBe(200);
      const metrics = (await get(telemetry, '/metrics'))?.body;
      expect(metric(metrics, 'hugot_sink_up', 'output')).toBe(1);
      expect(metric(metrics, 'hugot_sink_outages_total', 'output')).toBeGreaterThanOrEqual(1);
      expect(worker.output(), context()).toMatch(
        /route enrich sink: outage over after \d+ ms \(\d+ reconnect attempts\)/,
      );

      worker.child.kill('SIGTERM');
      expect(await worker.exited, context()).toBe(0);
    } finally {
      if (worker.gone() === undefined) worker.child.kill('SIGKILL');
      client.disconnect();
    }
  });
});
