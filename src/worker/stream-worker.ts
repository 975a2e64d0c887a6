// The worker process: an engine (batcher + inference threads), a generative engine per generative
// pipeline, and, for each route, a source, a processor, a sink and a DLQ. stop() is the graceful
// path: sources stop taking records and let those in flight finish and be acknowledged, the
// engines drain, sinks flush. Under full load the queues hold more than the shutdown budget can
// run, so at half the budget what is still queued is given up (not acknowledged: the broker
// delivers it again) and only the batches on the threads finish.
import type { ConnectionHealth } from '../connectors/connection-health.ts';
import type { WorkerConfig } from '../config/schema.ts';
import { createSource } from '../connectors/create-source.ts';
import type { Source, SourceDeps } from '../connectors/source.ts';
import { BatchEngine } from '../engine/batch-engine.ts';
import type { GenerativeEngine } from '../generative/generative-engine.ts';
import { childLogger, type Logger } from '../logger.ts';
import { createSink, sinkConnects } from '../connectors/create-sink.ts';
import type { Sink } from '../route/sink.ts';
import { startGenerativeEngines } from './generative-engines.ts';
import { compileWorkerPlan, type WorkerPlan } from './worker-plan.ts';
import { checkModelFit } from '../engine/model-fit.ts';
import { RecordProcessor, type Submit } from '../route/processor.ts';
import type { RouteRunner } from '../route/route-runner.ts';
import type { RouteProgress } from '../telemetry/progress.ts';
import { StreamedGeneration } from '../route/streamed-generation.ts';
import { HealthState } from '../telemetry/health.ts';
import { WorkerTelemetry } from '../telemetry/worker-telemetry.ts';
import type { RegistryConnection } from '../schema/registry-connection.ts';
import { RouteSchemas } from '../schema/route-schemas.ts';

/** The health key of the worker's Schema Registry connection (/readyz). */
const REGISTRY_HEALTH = 'schema-registry';

export interface StreamWorkerOptions {
  logger: Logger;
  /** Inference thread module (tests substitute their own). */
  workerFile?: string;
  /** Health, metrics and tracing hooks (src/telemetry); without it, health is kept alone. */
  telemetry?: WorkerTelemetry;
}

export class StreamWorker {
  /** Absent when every route's pipeline is generative. */
  private readonly engine: BatchEngine | undefined;
  private readonly generative: Map<string, GenerativeEngine>;
  private readonly sources: Source[];
  private readonly runners: RouteRunner[];
  private readonly sinks: Sink[];
  private readonly logger: Logger;
  private stopping: Promise<void> | undefined;
  private observe!: WorkerTelemetry;
  private readonly healthListeners: Set<(route: string, health: ConnectionHealth) => void>;
  /** Ends the waits of records for the Schema Registry: they are left to be read again. */
  private closeRegistry: () => void = () => undefined;

  private constructor(
    engine: BatchEngine | undefined,
    generative: Map<string, GenerativeEngine>,
    sources: Source[],
    runners: RouteRunner[],
    sinks: Sink[],
    logger: Logger,
    healthListeners: Set<(route: string, health: ConnectionHealth) => void>,
  ) {
    this.healthListeners = healthListeners;
    this.engine = engine;
    this.generative = generative;
    this.sources = sources;
    this.runners = runners;
    this.sinks = sinks;
    this.logger = logger;
  }

  /** Compiles the config into its plan and starts from it. */
  static async start(config: WorkerConfig, options: StreamWorkerOptions): Promise<StreamWorker> {
    const plan = compileWorkerPlan(config, options.logger);
    await checkModelFit(plan.models, config.pipelines);
    return await StreamWorker.fromPlan(plan, options);
  }

  static async fromPlan(plan: WorkerPlan, options: StreamWorkerOptions): Promise<StreamWorker> {
    const { logger } = options;
    const { config, connections } = plan;
    const observe =
      options.telemetry ??
      new WorkerTelemetry({
        health: new HealthState({ sourceOutageMs: config.telemetry.health.sourceOutageMs }),
        lagIntervalMs: config.telemetry.lagIntervalMs,
        logger,
      });
    const generative = await startGenerativeEngines(plan.generative, logger);
    let engine: BatchEngine | undefined;
    try {
      engine =
        plan.batch !== undefined
          ? await BatchEngine.startFromPlan(plan.batch, {
              logger,
              ...(options.workerFile !== undefined ? { workerFile: options.workerFile } : {}),
            })
          : undefined;
    } catch (err) {
      await Promise.allSettled([...generative.values()].map((g) => g.close('abort')));
      throw err;
    }
    observe.enginesStarted(engine, generative);
    const closeEngines = (mode: 'drain' | 'abort'): Promise<unknown> =>
      Promise.allSettled(closeAll([engine, ...generative.values()], mode));
    const sources: Source[] = [];
    const runners: RouteRunner[] = [];
    const sinks: Sink[] = [];
    const healthListeners = new Set<(route: string, health: ConnectionHealth) => void>();
    healthListeners.add((route, health) => observe.sourceHealth(route, health));
    // One registry for the worker: its outage makes the worker not ready, saying why.
    let registry: RegistryConnection | undefined;
    const registryOf = (): RegistryConnection => {
      if (registry !== undefined) return registry;
      registry = connections.schemaRegistry('routes');
      observe.health.addSink(REGISTRY_HEALTH, 'Schema Registry');
      registry.onHealth((health) => observe.health.connectionHealth(REGISTRY_HEALTH, health));
      return registry;
    };
    try {
      for (const { name, route, task, pipelineOptions } of plan.routes) {
        const routeLogger = childLogger(logger, { route: name });
        const sink = createSink(route.sink, {
          connections,
          logger: routeLogger,
          deadLetters: false,
          onHealth: sinkConnects(route.sink) ? observe.sinkHealth(name, 'sink') : undefined,
        });
        const dlq =
          route.dlq === undefined
            ? undefined
            : createSink(route.dlq, {
                connections,
                logger: routeLogger,
                deadLetters: true,
                onHealth: sinkConnects(route.dlq) ? observe.sinkHealth(name, 'dlq') : undefined,
              });
        for (const s of [sink, dlq]) if (s !== undefined) sinks.push(s);
        const generation = generative.get(route.pipeline);
        let submit: Submit;
        let onPressure: SourceDeps['onPressure'];
        if (generation !== undefined) {
          const streamed = new StreamedGeneration({
            engine: observe.generation(generation, route.pipeline),
            output: route.output,
            generation: route.generation,
            writePartial: (record) => sink?.write(record) ?? Promise.resolve(),
          });
          submit = (_, input, context) => streamed.run(input, context);
          onPressure = (listener) => generation.onPressure(listener);
        } else {
          const batch = engine as BatchEngine;
          submit = (pipeline, input, { record }) =>
            batch.submit(pipeline, input, observe.submitOptions(record));
          onPressure = (listener) => batch.onPressure(route.pipeline, listener);
        }
        const processor = new RecordProcessor(route, task, config.limits, submit, {
          pipelineOptions,
          schemas: RouteSchemas.needed(route)
            ? new RouteSchemas(route, registryOf(), routeLogger)
            : undefined,
        });
        const runner = observe.runner(
          {
            name,
            processor,
            sink,
            dlq,
            retries: config.delivery.retries,
            logger: routeLogger,
            logRecordBytes: config.telemetry.logRecordBytes,
          },
          route.sink,
        );
        const source = createSource(
          {
            route,
            delivery: config.delivery,
            runner,
            onPressure,
            sink,
            dlq,
            logger: routeLogger,
            ...observe.sourceHooks(name, route, onPressure),
            onHealth: (health) => {
              for (const listener of healthListeners) listener(name, health);
            },
          },
          connections,
        );
        runners.push(runner);
        sources.push(source);
      }
      for (const [i, source] of sources.entries()) {
        await source.start();
        observe.sourceStarted(runners[i]?.name ?? `route-${i}`, source);
      }
    } catch (err) {
      await Promise.allSettled(sources.map((s) => s.stop()));
      await closeEngines('abort');
      await Promise.allSettled(sinks.map((s) => s.close()));
      throw err;
    }
    logger.info({ routes: runners.map((r) => r.name) }, 'stream worker running');
    const worker = new StreamWorker(
      engine,
      generative,
      sources,
      runners,
      sinks,
      logger,
      healthListeners,
    );
    worker.closeRegistry = () => connections.closeSchemaRegistry();
    worker.observe = observe;
    observe.running(() => worker.counters());
    return worker;
  }

  /** Readiness and liveness (/readyz, /livez): also what ends a worker whose source died. */
  get health(): HealthState {
    return this.observe.health;
  }

  /** Hears every source's connection state (reconnecting, back, failed for good). */
  onSourceHealth(listener: (route: string, health: ConnectionHealth) => void): () => void {
    this.healthListeners.add(listener);
    return () => this.healthListeners.delete(listener);
  }

  /** Resolves when every source is finite and has been read to its end (files); never otherwise. */
  get finished(): Promise<void> {
    const finite: Promise<void>[] = [];
    for (const source of this.sources) {
      if (source.finished === undefined) return new Promise(() => undefined);
      finite.push(source.finished);
    }
    return Promise.all(finite).then(() => undefined);
  }

  /** Each route's counters, with its source's total where the source knows one (a file). */
  counters(): Record<string, RouteProgress> {
    return Object.fromEntries(
      this.runners.map((r, i) => {
        const total = this.sources[i]?.total?.();
        return [r.name, { ...r.counters, ...(total !== undefined ? { total } : {}) }];
      }),
    );
  }

  /** Drains within `timeoutMs`; rejects if it could not (what was unfinished was not acknowledged). */
  stop(timeoutMs: number): Promise<void> {
    this.observe.draining();
    this.stopping ??= this.drain(timeoutMs).finally(() => this.observe.stop());
    return this.stopping;
  }

  /**
   * During a drain, gives up the records still queued (not acknowledged: they will be delivered
   * again) so that the drain ends once the running batches are written and committed: what half
   * the shutdown timeout does, and a second stop signal does at once.
   */
  giveUpQueued(): void {
    // Only the queue is given up; the shards stop later by the drain's own path. The forced
    // pool close this replaces was in play both times a native abort was seen on SIGTERM under
    // load (docs/operations.md); that it was the cause is not established.
    this.engine?.giveUpQueued();
    // Records waiting out a Schema Registry outage are queued too: they are left to be read again.
    this.closeRegistry();
    void Promise.all(closeAll([...this.generative.values()], 'abort')).catch(() => undefined);
  }

  private async closeEngines(mode: 'drain' | 'abort'): Promise<void> {
    await Promise.all(closeAll([this.engine, ...this.generative.values()], mode));
  }

  private async drain(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`shutdown did not finish within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    const giveUp = setTimeout(() => {
      this.logger.warn(
        { afterMs: Math.round(timeoutMs / 2) },
        'shutdown: giving up queued records (not acknowledged; they will be delivered again); running batches finish',
      );
      this.giveUpQueued();
    }, timeoutMs / 2);
    giveUp.unref();
    try {
      await Promise.race([
        (async () => {
          await Promise.all(this.sources.map((s) => s.stop()));
          await this.closeEngines('drain');
          await Promise.all(this.sinks.map((s) => s.close()));
        })(),
        deadline,
      ]);
      this.logger.info({ routes: this.counters() }, 'stream worker stopped');
    } catch (err) {
      // Waits for the batches on the threads (bounded): stopping a thread inside an ONNX run
      // would abort the process natively.
      await this.closeEngines('abort').catch(() => undefined);
      throw err;
    } finally {
      clearTimeout(timer);
      clearTimeout(giveUp);
    }
  }
}

function closeAll(
  engines: readonly ({ close(mode: 'drain' | 'abort'): Promise<void> } | undefined)[],
  mode: 'drain' | 'abort',
): Promise<void>[] {
  return engines.flatMap((e) => (e === undefined ? [] : [e.close(mode)]));
}
