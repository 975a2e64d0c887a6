// The stream worker's few touch points with telemetry, in one place: health reports from the
// sources, metric hooks on the engines, traced route runners, lag polling. Without metrics or
// tracing every method is a plain pass-through, so a worker with telemetry off runs the same
// objects it would run without this file.
import type { RouteConfig, SinkConfig } from '../config/schema.ts';
import type { ConnectionHealth } from '../connectors/connection-health.ts';
import type { Source, SourceDeps } from '../connectors/source.ts';
import type { BatchEngine, SubmitOptions } from '../engine/batch-engine.ts';
import type { GenerativeEngine } from '../generative/generative-engine.ts';
import type { Logger } from '../logger.ts';
import type { SourceRecord } from '../route/record.ts';
import { RouteRunner, type RouteCounters, type RouteRunnerOptions } from '../route/route-runner.ts';
import type { GenerationSubmitter } from '../route/streamed-generation.ts';
import type { HealthState } from './health.ts';
import { LagMonitor, type LagSource } from './lag-monitor.ts';
import { meteredGeneration } from './metered-generation.ts';
import { outageLog, type OutageLog } from './outage-log.ts';
import type { RecordTracing } from './record-tracing.ts';
import { TracedRouteRunner } from './traced-route-runner.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

export interface WorkerTelemetryOptions {
  health: HealthState;
  metrics?: WorkerMetrics | undefined;
  tracing?: RecordTracing | undefined;
  lagIntervalMs: number;
  logger: Logger;
}

export class WorkerTelemetry {
  readonly health: HealthState;
  private readonly metrics: WorkerMetrics | undefined;
  private readonly tracing: RecordTracing | undefined;
  private readonly options: WorkerTelemetryOptions;
  private readonly lagSources: LagSource[] = [];
  private readonly unsubscribe: (() => void)[] = [];
  private lagMonitor: LagMonitor | undefined;
  private readonly outages: OutageLog;

  constructor(options: WorkerTelemetryOptions) {
    this.options = options;
    this.outages = outageLog({
      logger: options.logger,
      onOutage: (route, end) =>
        end === 'source'
          ? options.metrics?.sourceOutage(route)
          : options.metrics?.sinkOutage(route, sinkLabel(end)),
    });
    this.health = options.health;
    this.metrics = options.metrics;
    this.tracing = options.tracing;
  }

  /** Every model is loaded: readiness may turn green, metrics read the engines from now on. */
  enginesStarted(engine: BatchEngine | undefined, generative: Map<string, GenerativeEngine>): void {
    this.health.warmed();
    const { metrics, tracing } = this;
    if (engine !== undefined && (metrics !== undefined || tracing !== undefined)) {
      metrics?.observeEngine(engine);
      this.unsubscribe.push(
        engine.onBatch((batch) => {
          metrics?.batch(batch);
          tracing?.batch(batch);
        }),
      );
    }
    if (metrics !== undefined)
      for (const [pipeline, g] of generative) metrics.observeGenerative(pipeline, g);
  }

  runner(options: RouteRunnerOptions, sink: SinkConfig): RouteRunner {
    return this.tracing === undefined
      ? new RouteRunner(options)
      : new TracedRouteRunner(options, this.tracing, sinkName(sink));
  }

  /** What a record's input carries into the engine (its span context when traced). */
  submitOptions(record: SourceRecord): SubmitOptions {
    const trace = this.tracing?.contextOf(record);
    return trace === undefined ? {} : { trace };
  }

  generation(engine: GenerativeEngine, pipeline: string): GenerationSubmitter {
    return this.metrics === undefined ? engine : meteredGeneration(engine, this.metrics, pipeline);
  }

  /**
   * Hooks for one route's source: its rebalances and failed commits are counted, its pressure
   * watched for hugot_source_paused. Its health reports reach `health` through the worker's
   * listeners (StreamWorker.onSourceHealth).
   */
  sourceHooks(
    name: string,
    route: RouteConfig,
    onPressure: SourceDeps['onPressure'],
  ): Pick<SourceDeps, 'onEvent'> {
    // Kafka is ready once its group assigned partitions; the others once they connected.
    this.health.addSource(name, route.source.type === 'kafka');
    const metrics = this.metrics;
    if (metrics === undefined) return {};
    metrics.sourcePaused(name, false);
    metrics.sourceUp(name, true);
    this.unsubscribe.push(onPressure((p) => metrics.sourcePaused(name, p === 'pause')));
    return {
      onEvent: (event) =>
        event === 'rebalance' ? metrics.rebalanced(name) : metrics.commitFailed(name),
    };
  }

  /** A source's connection state: to /readyz, to the outage log, to hugot_source_up. */
  sourceHealth(name: string, health: ConnectionHealth): void {
    this.health.connectionHealth(name, health);
    this.outages(name, 'source', health);
    this.metrics?.sourceUp(name, health.state === 'healthy');
  }

  /**
   * Where a route's sink (or DLQ) reports its connection state: to /readyz, to the outage log,
   * to hugot_sink_up.
   */
  sinkHealth(route: string, end: 'sink' | 'dlq'): (health: ConnectionHealth) => void {
    const key = `${end}\u0000${route}`;
    this.health.addSink(key, `${end === 'sink' ? 'sink' : 'DLQ'} of route ${route}`);
    const metrics = this.metrics;
    metrics?.sinkUp(route, sinkLabel(end), true);
    return (health) => {
      this.health.connectionHealth(key, health);
      this.outages(route, end, health);
      metrics?.sinkUp(route, sinkLabel(end), health.state === 'healthy');
    };
  }

  sourceStarted(name: string, source: Source): void {
    this.health.sourceStarted(name);
    if (this.metrics !== undefined && source.lag !== undefined)
      this.lagSources.push({ route: name, lag: () => source.lag?.() ?? Promise.resolve([]) });
  }

  /** Every source runs: route counters and lag are read from now on. */
  running(counters: () => Record<string, RouteCounters>): void {
    const metrics = this.metrics;
    if (metrics === undefined) return;
    metrics.observeRoutes(counters);
    this.lagMonitor = new LagMonitor({
      sources: this.lagSources,
      intervalMs: this.options.lagIntervalMs,
      record: (route, samples) => metrics.consumerLag(route, samples),
      logger: this.options.logger,
    });
    this.lagMonitor.start();
  }

  /** Not ready from now on; lag is read once more after the sources committed (stop()). */
  draining(): void {
    this.health.startDraining();
  }

  async stop(): Promise<void> {
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    await this.lagMonitor?.stop();
  }
}

function sinkLabel(end: 'sink' | 'dlq'): 'output' | 'dlq' {
  return end === 'sink' ? 'output' : 'dlq';
}

/** A sink's name for span names: its topic, queue or stream. */
function sinkName(sink: SinkConfig): string {
  switch (sink.type) {
    case 'kafka':
      return sink.topic;
    case 'bullmq':
      return sink.queue;
    case 'bullmq-result':
      return 'bullmq result';
    case 'redis-stream':
      return sink.stream;
    case 'file':
      return sink.path;
  }
}
