// A real Prometheus (the project's launcher, Debian's package) scrapes a real worker process on
// its telemetry port; what the worker did is read back through Prometheus's HTTP API, as an
// operator's dashboard would: the records counter matches what the route processed, and the
// consumer lag, N while nothing is committed, falls to 0 once the topic is drained.
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../../scripts/services/process-control.ts';
import {
  queryPrometheus,
  startPrometheus,
  type LocalPrometheus,
} from '../../scripts/services/prometheus-local.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const PARTITIONS = 2;
const RECORDS = 400;
// Bad records are part of "what the route processed": they are counted as dead-lettered.
const BAD_RECORDS = 6;

let prometheus: LocalPrometheus;
let telemetryPort: number;

beforeAll(async () => {
  telemetryPort = await freePort();
  prometheus = await startPrometheus({
    targets: [`127.0.0.1:${telemetryPort}`],
    dataDir: join(tmpdir(), uniqueName('prometheus')),
    scrapeIntervalMs: 500,
  });
});

afterAll(async () => {
  await prometheus.stop();
});

/** One number from a query whose answer is a single sample (or none yet). */
async function scalar(query: string): Promise<number | undefined> {
  const samples = await queryPrometheus(prometheus.url, query);
  return samples[0]?.value;
}

describe('metrics scraped by a real Prometheus', () => {
  it('hugot_records_total matches the route, hugot_consumer_lag falls to 0', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const dlq = uniqueName('dlq');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 1 },
      { topic: dlq, partitions: 1 },
    ]);
    const good = corpusRecords(RECORDS).map((r, i) => ({
      partition: i % PARTITIONS,
      key: r.id,
      value: JSON.stringify(r),
    }));
    const bad = Array.from({ length: BAD_RECORDS }, (_, i) => ({
      partition: i % PARTITIONS,
      key: `bad-${i}`,
      value: '{"text": not json',
    }));
    // The records wait in the topic before the worker starts: its first lag reading is all of them.
    await kit.produce(input, [...good, ...bad]);
    const route = 'classify';
    const base = kafkaRouteConfig({ brokers: kit.brokers, input, output, dlq, groupId });
    const worker = startWorkerProcess({
      ...base,
      // The first commit comes 20 s after the first record: the lag stays at its first value for
      // 40 of Prometheus' 0.5-s scrapes, so a stalled scrape on a loaded machine cannot miss it
      // (5 s once did). Processing itself is waited on by progress, not by this interval.
      delivery: { mode: 'at-least-once', commitIntervalMs: 20_000 },
      telemetry: { port: telemetryPort, host: '127.0.0.1', lagIntervalMs: 250 },
    });
    const total = `sum(hugot_records_total{route="${route}"})`;
    const lagSum = `sum(hugot_consumer_lag{route="${route}"})`;
    const watch = {
      stallMs: 60_000,
      firstProgressMs: 180_000,
      abort: worker.gone,
      context: () => worker.output().slice(-3000),
    };
    try {
      const processed = await waitForProgress(() => scalar(total), {
        what: 'Prometheus sees every record counted',
        done: (n) => n === RECORDS + BAD_RECORDS,
        ...watch,
      });
      expect(processed).toBe(RECORDS + BAD_RECORDS);

      const lag = await waitForProgress(
        async () => ({
          series: (await queryPrometheus(prometheus.url, `hugot_consumer_lag{route="${route}"}`))
            .length,
          lag: await scalar(lagSum),
        }),
        {
          what: 'Prometheus sees the consumer lag fall to 0',
          done: (seen) => seen.series === PARTITIONS && seen.lag === 0,
          ...watch,
        },
      );
      expect(lag).toEqual({ series: PARTITIONS, lag: 0 });

      // Before the first commit the worker reported the whole topic as lag.
      const highest = await scalar(`max_over_time(${lagSum}[10m:250ms])`);
      expect(highest).toBe(RECORDS + BAD_RECORDS);

      // Per outcome, against the topics themselves.
      const outcomes = new Map(
        (await queryPrometheus(prometheus.url, `hugot_records_total{route="${route}"}`)).map(
          (s) => [s.labels['outcome'], s.value],
        ),
      );
      const sum = async (topic: string): Promise<number> =>
        [...(await kit.endOffsets(topic)).values()].reduce((a, o) => a + Number(o), 0);
      expect(outcomes.get('written')).toBe(await sum(output));
      expect(outcomes.get('dead_lettered')).toBe(await sum(dlq));
      expect(outcomes.get('written')).toBe(RECORDS);
      expect(outcomes.get('dead_lettered')).toBe(BAD_RECORDS);
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
  });
});
