// The operator surface of one worker process: the health state (always: it is what ends a
// process whose source died for good), and when asked for in `telemetry:`, the HTTP server with
// /metrics, /livez and /readyz, and tracing. start() runs before the models load, so /readyz
// is red while they do. With telemetry off, `metrics` and `tracing` are undefined and the
// stream worker adds no hook at all.
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import type { Logger } from '../logger.ts';
import { HealthState } from './health.ts';
import type { RecordTracing } from './record-tracing.ts';
import { TelemetryServer } from './telemetry-server.ts';
import type { TelemetryConfig } from '../config/telemetry-options.ts';
import { startRuntimeMetrics, type RuntimeMetrics } from './runtime-metrics.ts';
import { serviceResource } from './service-resource.ts';
import { startTracing, type TracingHandle } from './tracing-sdk.ts';
import { WorkerMetrics } from './worker-metrics.ts';
import { WorkerTelemetry } from './worker-telemetry.ts';

export class Telemetry {
  readonly config: TelemetryConfig;
  readonly health: HealthState;
  readonly metrics: WorkerMetrics | undefined;
  readonly tracing: RecordTracing | undefined;
  private readonly server: TelemetryServer | undefined;
  private readonly meterProvider: MeterProvider | undefined;
  private readonly tracingHandle: TracingHandle | undefined;
  private readonly runtimeMetrics: RuntimeMetrics | undefined;

  private constructor(parts: {
    config: TelemetryConfig;
    health: HealthState;
    metrics?: WorkerMetrics;
    server?: TelemetryServer;
    meterProvider?: MeterProvider;
    tracing?: TracingHandle;
    runtimeMetrics?: RuntimeMetrics;
  }) {
    this.config = parts.config;
    this.health = parts.health;
    this.metrics = parts.metrics;
    this.server = parts.server;
    this.meterProvider = parts.meterProvider;
    this.tracingHandle = parts.tracing;
    this.tracing = parts.tracing?.tracing;
    this.runtimeMetrics = parts.runtimeMetrics;
  }

  static async start(config: TelemetryConfig, logger: Logger): Promise<Telemetry> {
    const health = new HealthState({ sourceOutageMs: config.health.sourceOutageMs });
    if (!config.enabled) return new Telemetry({ config, health });
    let metrics: WorkerMetrics | undefined;
    let meterProvider: MeterProvider | undefined;
    let server: TelemetryServer | undefined;
    let runtimeMetrics: RuntimeMetrics | undefined;
    if (config.port !== undefined) {
      let exporter: PrometheusExporter | undefined;
      if (config.metrics) {
        exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
        meterProvider = new MeterProvider({
          resource: serviceResource(config),
          readers: [exporter],
        });
        const meter = meterProvider.getMeter('hugot-stream');
        metrics = new WorkerMetrics(meter);
        runtimeMetrics = startRuntimeMetrics(meterProvider, meter, config.serviceVersion);
      }
      server = await TelemetryServer.start({
        host: config.host,
        port: config.port,
        health,
        ...(exporter !== undefined
          ? { metrics: (req, res) => exporter.getMetricsRequestHandler(req, res) }
          : {}),
      });
      logger.info(
        { port: server.port, metrics: config.metrics },
        'telemetry server listening (/metrics, /livez, /readyz)',
      );
    }
    const endpoint = config.tracing.endpoint;
    const tracing =
      endpoint !== undefined
        ? startTracing(
            { ...config.tracing, endpoint },
            serviceResource(config, config.tracing.serviceName ?? config.serviceName),
          )
        : undefined;
    return new Telemetry({
      config,
      health,
      ...(metrics !== undefined ? { metrics } : {}),
      ...(server !== undefined ? { server } : {}),
      ...(meterProvider !== undefined ? { meterProvider } : {}),
      ...(tracing !== undefined ? { tracing } : {}),
      ...(runtimeMetrics !== undefined ? { runtimeMetrics } : {}),
    });
  }

  /** The hooks a StreamWorker takes (StreamWorkerOptions.telemetry). */
  forWorker(logger: Logger): WorkerTelemetry {
    return new WorkerTelemetry({
      health: this.health,
      metrics: this.metrics,
      tracing: this.tracing,
      lagIntervalMs: this.config.lagIntervalMs,
      logger,
    });
  }

  /** The server's bound port (telemetry.port 0 picks one). */
  get port(): number | undefined {
    return this.server?.port;
  }

  /** Flushes spans, stops the server last (probes and a final scrape see the drained state). */
  async close(): Promise<void> {
    this.health.close();
    this.runtimeMetrics?.stop();
    await this.tracingHandle?.shutdown().catch(() => undefined);
    await this.meterProvider?.shutdown().catch(() => undefined);
    await this.server?.close();
  }
}
