import {
  MeterProvider,
  MetricReader,
  type DataPoint,
  type Histogram,
} from '@opentelemetry/sdk-metrics';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.ts';
import type { RouteCounters } from '../../../src/route/route-runner.ts';
import { packageVersion } from '../../../src/version.ts';
import { Telemetry } from '../../../src/telemetry/telemetry.ts';
import { telemetrySchema } from '../../../src/config/telemetry-options.ts';
import { WorkerMetrics } from '../../../src/telemetry/worker-metrics.ts';

/** Reads the metrics back in memory, as a scrape would. */
class ReadBack extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

async function collect(reader: ReadBack): Promise<Map<string, DataPoint<unknown>[]>> {
  const { resourceMetrics } = await reader.collect();
  const byName = new Map<string, DataPoint<unknown>[]>();
  for (const scope of resourceMetrics.scopeMetrics)
    for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints);
  return byName;
}

function value(
  points: Map<string, DataPoint<unknown>[]>,
  name: string,
  attributes: Record<string, string> = {},
): unknown {
  const found = (points.get(name) ?? []).find((p) =>
    Object.entries(attributes).every(([k, v]) => p.attributes[k] === v),
  );
  return found?.value;
}

function setup(): { metrics: WorkerMetrics; reader: ReadBack } {
  const reader = new ReadBack();
  const provider = new MeterProvider({ readers: [reader] });
  return { metrics: new WorkerMetrics(provider.getMeter('test')), reader };
}

const counters = (c: Partial<RouteCounters>): RouteCounters => ({
  received: 0,
  written: 0,
  deadLettered: 0,
  retried: 0,
  truncated: 0,
  ...c,
});

describe('WorkerMetrics', () => {
  it('reads records by route and outcome from the route counters at each collection', async () => {
    const { metrics, reader } = setup();
    const live = { a: counters({ written: 3, deadLettered: 1 }), b: counters({ retried: 2 }) };
    metrics.observeRoutes(() => live);
    let points = await collect(reader);
    expect(value(points, 'hugot_records', { route: 'a', outcome: 'written' })).toBe(3);
    expect(value(points, 'hugot_records', { route: 'a', outcome: 'dead_lettered' })).toBe(1);
    expect(value(points, 'hugot_records', { route: 'b', outcome: 'retried' })).toBe(2);
    live.a.written = 10;
    points = await collect(reader);
    expect(value(points, 'hugot_records', { route: 'a', outcome: 'written' })).toBe(10);
  });

  it('records each batch: size, padded tokens and inference seconds by pipeline and shard', async () => {
    const { metrics, reader } = setup();
    metrics.batch({ pipeline: 'embed', shard: 'cpu', items: 8, paddedTokens: 256, computeMs: 40 });
    metrics.batch({ pipeline: 'embed', shard: 'cpu', items: 2, paddedTokens: 64, computeMs: 10 });
    const points = await collect(reader);
    const size = value(points, 'hugot_batch_size', { pipeline: 'embed' }) as Histogram;
    expect(size.count).toBe(2);
    expect(size.sum).toBe(10);
    const padded = value(points, 'hugot_batch_padded_tokens', { pipeline: 'embed' }) as Histogram;
    expect(padded.sum).toBe(320);
    const seconds = value(points, 'hugot_inference_seconds', {
      pipeline: 'embed',
      shard: 'cpu',
    }) as Histogram;
    expect(seconds.count).toBe(2);
    expect(seconds.sum).toBeCloseTo(0.05, 6);
  });

  it('reads queue depth, padding efficiency and thread crashes from the engine', async () => {
    const { metrics, reader } = setup();
    const engine = {
      pipelines: ['embed', 'classify'],
      queued: (p: string) => (p === 'embed' ? 7 : 0),
      stats: { realTokens: 90, paddedTokens: 120 },
      threadCrashes: 2,
    };
    metrics.observeEngine(engine);
    metrics.observeGenerative('chat', {
      pending: 4,
      stats: () => ({
        active: 3,
        reservedKvTokens: 900,
        prefixCache: { lookups: 10, hits: 7, tokensSaved: 2100, evictions: 4, bytes: 5000 },
      }),
    });
    const points = await collect(reader);
    expect(value(points, 'hugot_queue_depth', { pipeline: 'embed' })).toBe(7);
    expect(value(points, 'hugot_queue_depth', { pipeline: 'classify' })).toBe(0);
    expect(value(points, 'hugot_queue_depth', { pipeline: 'chat' })).toBe(4);
    expect(value(points, 'hugot_padding_efficiency_ratio')).toBeCloseTo(0.75, 6);
    expect(value(points, 'hugot_worker_thread_crashes')).toBe(2);
    expect(value(points, 'hugot_generation_active_sequences', { pipeline: 'chat' })).toBe(3);
    expect(value(points, 'hugot_generation_kv_reserved_tokens', { pipeline: 'chat' })).toBe(900);
    const lookups = (result: string): unknown =>
      value(points, 'hugot_generation_prefix_cache_lookups', { pipeline: 'chat', result });
    expect([lookups('hit'), lookups('miss')]).toEqual([7, 3]);
    expect(value(points, 'hugot_generation_prefix_cache_saved_tokens', { pipeline: 'chat' })).toBe(
      2100,
    );
    expect(value(points, 'hugot_generation_prefix_cache_evictions', { pipeline: 'chat' })).toBe(4);
    expect(value(points, 'hugot_generation_prefix_cache_bytes', { pipeline: 'chat' })).toBe(5000);
  });

  it('counts commit failures and rebalances, and shows a paused route as 1', async () => {
    const { metrics, reader } = setup();
    metrics.commitFailed('a');
    metrics.commitFailed('a');
    metrics.rebalanced('a');
    metrics.sourcePaused('a', true);
    metrics.sourcePaused('b', true);
    metrics.sourcePaused('b', false);
    const points = await collect(reader);
    expect(value(points, 'hugot_commit_failures', { route: 'a' })).toBe(2);
    expect(value(points, 'hugot_rebalances', { route: 'a' })).toBe(1);
    expect(value(points, 'hugot_source_paused', { route: 'a' })).toBe(1);
    expect(value(points, 'hugot_source_paused', { route: 'b' })).toBe(0);
  });

  it('keeps the latest lag samples per route, labelled by their source kind; a partition no longer reported disappears', async () => {
    const { metrics, reader } = setup();
    metrics.consumerLag('a', [
      { of: { topic: 'mails', partition: '0' }, lag: 5 },
      { of: { topic: 'mails', partition: '1' }, lag: 7 },
    ]);
    metrics.consumerLag('b', [{ of: { queue: 'jobs' }, lag: 3 }]);
    metrics.consumerLag('c', [{ of: { stream: 'docs', group: 'g' }, lag: 2 }]);
    metrics.consumerLag('a', [{ of: { topic: 'mails', partition: '1' }, lag: 0 }]);
    const points = await collect(reader);
    const lag = points.get('hugot_consumer_lag') ?? [];
    expect(lag.map((p) => [p.attributes, p.value])).toEqual(
      expect.arrayContaining([
        [{ route: 'a', topic: 'mails', partition: '1' }, 0],
        [{ route: 'b', queue: 'jobs' }, 3],
        [{ route: 'c', stream: 'docs', group: 'g' }, 2],
      ]),
    );
    expect(lag).toHaveLength(3);
  });

  it('records time to first token and generated tokens', async () => {
    const { metrics, reader } = setup();
    metrics.firstToken('chat', 0.2);
    metrics.tokens('chat', 12);
    metrics.tokens('chat', 3);
    const points = await collect(reader);
    expect(
      (value(points, 'hugot_generation_ttft_seconds', { pipeline: 'chat' }) as Histogram).sum,
    ).toBeCloseTo(0.2);
    expect(value(points, 'hugot_generation_tokens', { pipeline: 'chat' })).toBe(15);
  });
});

describe('Telemetry server', () => {
  let telemetry: Telemetry | undefined;
  afterEach(async () => {
    await telemetry?.close();
    telemetry = undefined;
  });

  it('serves Prometheus text with _total counters, /livez and /readyz on one port', async () => {
    telemetry = await Telemetry.start(
      telemetrySchema.parse({ port: 0, host: '127.0.0.1' }),
      silentLogger,
    );
    const base = `http://127.0.0.1:${telemetry.port}`;
    telemetry.metrics?.observeRoutes(() => ({ r: counters({ written: 4 }) }));
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain('hugot_records_total{route="r",outcome="written"} 4');
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    const notReady = await fetch(`${base}/readyz`);
    expect(notReady.status).toBe(503);
    expect(((await notReady.json()) as { reasons: string[] }).reasons).toContain(
      'models are loading',
    );
    telemetry.health.warmed();
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`${base}/nothing`)).status).toBe(404);
  });

  it('names the service, says its build, and exports process and runtime metrics', async () => {
    telemetry = await Telemetry.start(
      telemetrySchema.parse({ port: 0, host: '127.0.0.1', serviceName: 'mail-enricher' }),
      silentLogger,
    );
    const text = await (await fetch(`http://127.0.0.1:${telemetry.port}/metrics`)).text();
    expect(text).toMatch(/target_info\{[^}]*service_name="mail-enricher"/);
    expect(text).toMatch(new RegExp(`target_info\\{[^}]*service_version="${packageVersion()}"`));
    expect(text).not.toContain('unknown_service');
    expect(text).toMatch(
      new RegExp(
        `hugot_build_info\\{version="${packageVersion()}",node="${process.versions.node}"\\} 1`,
      ),
    );
    // From the maintained collectors, not hand-made: the process' memory and CPU, Node's heap.
    expect(text).toMatch(/^process_memory_usage \d+/m);
    expect(text).toMatch(/^process_cpu_time_total\{process_cpu_state="user"\} /m);
    expect(text).toMatch(/^nodejs_eventloop_utilization /m);
    expect(text).toMatch(/^v8js_memory_heap_space_size\{/m);
  });

  it('with enabled: false starts no server and records nothing', async () => {
    telemetry = await Telemetry.start(
      telemetrySchema.parse({
        enabled: false,
        port: 0,
        tracing: { endpoint: 'http://127.0.0.1:1/v1/traces' },
      }),
      silentLogger,
    );
    expect(telemetry.port).toBeUndefined();
    expect(telemetry.metrics).toBeUndefined();
    expect(telemetry.tracing).toBeUndefined();
  });

  it('is off by default: no port, no metrics, no tracing', async () => {
    telemetry = await Telemetry.start(telemetrySchema.parse({}), silentLogger);
    expect(telemetry.port).toBeUndefined();
    expect(telemetry.metrics).toBeUndefined();
    expect(telemetry.tracing).toBeUndefined();
  });
});
