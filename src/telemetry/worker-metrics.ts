// The worker's metrics, through the OpenTelemetry metrics API (served by the Prometheus exporter,
// docs/operations.md#metrics). Two kinds of bookkeeping: hooks called where something happens (a
// batch finished, a commit failed, a rebalance), and observable instruments that read state the
// worker keeps anyway (route counters, queue sizes, lag samples) only when scraped, so an idle
// metric costs nothing between scrapes.
import type { Attributes, Meter, ObservableResult } from '@opentelemetry/api';
import type { RouteCounters } from '../route/route-runner.ts';
import type { LagLabels, LagSample } from '../connectors/source.ts';

/** One finished inference batch (the engine's onBatch). */
export interface BatchSample {
  pipeline: string;
  shard: string;
  items: number;
  paddedTokens: number;
  computeMs: number;
}

/** What the batch engine shows: cumulative token counts, queue sizes, thread crashes. */
export interface EngineView {
  readonly pipelines: readonly string[];
  queued(pipeline: string): number;
  readonly stats: { realTokens: number; paddedTokens: number };
  readonly threadCrashes: number;
}

/** A generative engine's prefix caches, summed over its threads. */
export interface PrefixCacheView {
  lookups: number;
  hits: number;
  tokensSaved: number;
  evictions: number;
  bytes: number;
}

export interface GenerativeStats {
  active: number;
  reservedKvTokens: number;
  prefixCache?: PrefixCacheView;
}

/** What a generative engine shows, read from its threads' last step. */
export interface GenerativeView {
  readonly pending: number;
  stats(): GenerativeStats;
}

const BATCH_SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
const TOKEN_COUNTS = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16_384, 32_768, 65_536];
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class WorkerMetrics {
  private readonly meter: Meter;
  private readonly batchSize;
  private readonly paddedTokens;
  private readonly inferenceSeconds;
  private readonly commitFailures;
  private readonly rebalances;
  private readonly outages;
  private readonly sinkOutages;
  /** 1 while a route's source reads, 0 while it reconnects or failed. */
  private readonly up = new Map<string, number>();
  /** 1 while a route's sink (or DLQ) writes, 0 while it reconnects. */
  private readonly sinksUp = new Map<string, { route: string; sink: string; value: number }>();
  private readonly ttft;
  private readonly generatedTokens;
  private readonly paused = new Map<string, number>();
  private readonly lag = new Map<string, { route: string; of: LagLabels; value: number }>();
  private routes: () => Record<string, RouteCounters> = () => ({});
  private engine: EngineView | undefined;
  private readonly generative = new Map<string, GenerativeView>();

  constructor(meter: Meter) {
    this.meter = meter;
    this.batchSize = meter.createHistogram('hugot_batch_size', {
      description: 'Records per inference batch',
      advice: { explicitBucketBoundaries: BATCH_SIZES },
    });
    this.paddedTokens = meter.createHistogram('hugot_batch_padded_tokens', {
      description: 'Tokens the model computes on per batch: longest input x rows',
      advice: { explicitBucketBoundaries: TOKEN_COUNTS },
    });
    this.inferenceSeconds = meter.createHistogram('hugot_inference_seconds', {
      description: 'Compute time of one batch inside its inference thread',
      advice: { explicitBucketBoundaries: SECONDS },
    });
    this.commitFailures = meter.createCounter('hugot_commit_failures', {
      description: 'Offset commits or acknowledgements that failed (retried by the source)',
    });
    this.rebalances = meter.createCounter('hugot_rebalances', {
      description: 'Consumer group (re)joins: each one reassigns partitions',
    });
    this.outages = meter.createCounter('hugot_source_outages', {
      description: 'Outages of a route source: its broker or Redis gone, the source reconnecting',
    });
    this.sinkOutages = meter.createCounter('hugot_sink_outages', {
      description:
        'Outages of a route sink or DLQ (sink label output or dlq): its broker or Redis gone',
    });
    this.ttft = meter.createHistogram('hugot_generation_ttft_seconds', {
      description: 'Time from submitting a generation request to its first token',
      advice: { explicitBucketBoundaries: SECONDS },
    });
    this.generatedTokens = meter.createCounter('hugot_generation_tokens', {
      description: 'Tokens generated',
    });
    this.observe();
  }

  /** The routes' counters, read at every collection. */
  observeRoutes(counters: () => Record<string, RouteCounters>): void {
    this.routes = counters;
  }

  observeEngine(engine: EngineView): void {
    this.engine = engine;
  }

  observeGenerative(pipeline: string, engine: GenerativeView): void {
    this.generative.set(pipeline, engine);
  }

  batch(sample: BatchSample): void {
    this.batchSize.record(sample.items, { pipeline: sample.pipeline });
    this.paddedTokens.record(sample.paddedTokens, { pipeline: sample.pipeline });
    this.inferenceSeconds.record(sample.computeMs / 1000, {
      pipeline: sample.pipeline,
      shard: sample.shard,
    });
  }

  commitFailed(route: string): void {
    this.commitFailures.add(1, { route });
  }

  sourceOutage(route: string): void {
    this.outages.add(1, { route });
  }

  sourceUp(route: string, up: boolean): void {
    this.up.set(route, up ? 1 : 0);
  }

  sinkOutage(route: string, sink: 'output' | 'dlq'): void {
    this.sinkOutages.add(1, { route, sink });
  }

  sinkUp(route: string, sink: 'output' | 'dlq', up: boolean): void {
    this.sinksUp.set(`${sink}\u0000${route}`, { route, sink, value: up ? 1 : 0 });
  }

  rebalanced(route: string): void {
    this.rebalances.add(1, { route });
  }

  sourcePaused(route: string, paused: boolean): void {
    this.paused.set(route, paused ? 1 : 0);
  }

  /** Replaces a route's lag samples (partitions no longer assigned disappear). */
  consumerLag(route: string, samples: readonly LagSample[]): void {
    for (const [key, sample] of this.lag) if (sample.route === route) this.lag.delete(key);
    for (const { of, lag } of samples)
      this.lag.set(`${route}\u0000${JSON.stringify(of)}`, { route, of, value: lag });
  }

  firstToken(pipeline: string, seconds: number): void {
    this.ttft.record(seconds, { pipeline });
  }

  tokens(pipeline: string, count: number): void {
    this.generatedTokens.add(count, { pipeline });
  }

  private observe(): void {
    const meter = this.meter;
    meter
      .createObservableCounter('hugot_records', {
        description: 'Records by route and outcome (written, dead_lettered, retried)',
      })
      .addCallback((result) => {
        for (const [route, c] of Object.entries(this.routes())) {
          result.observe(c.written, { route, outcome: 'written' });
          result.observe(c.deadLettered, { route, outcome: 'dead_lettered' });
          result.observe(c.retried, { route, outcome: 'retried' });
        }
      });
    meter
      .createObservableGauge('hugot_padding_efficiency_ratio', {
        description: 'Real tokens / padded tokens over every batch so far (1 = no padding)',
      })
      .addCallback((result) => {
        const stats = this.engine?.stats;
        if (stats !== undefined && stats.paddedTokens > 0)
          result.observe(stats.realTokens / stats.paddedTokens);
      });
    meter
      .createObservableGauge('hugot_queue_depth', {
        description: 'Inputs waiting in a pipeline queue (generation: requests pending)',
      })
      .addCallback((result) => {
        for (const pipeline of this.engine?.pipelines ?? [])
          result.observe(this.engine?.queued(pipeline) ?? 0, { pipeline });
        for (const [pipeline, engine] of this.generative)
          result.observe(engine.pending, { pipeline });
      });
    meter
      .createObservableGauge('hugot_source_up', {
        description:
          '1 while a route source reads, 0 while it reconnects after an outage or failed',
      })
      .addCallback((result) => {
        for (const [route, value] of this.up) result.observe(value, { route });
      });
    meter
      .createObservableGauge('hugot_sink_up', {
        description: '1 while a route sink or DLQ writes, 0 while it reconnects after an outage',
      })
      .addCallback((result) => {
        for (const { route, sink, value } of this.sinksUp.values())
          result.observe(value, { route, sink });
      });
    meter
      .createObservableGauge('hugot_source_paused', {
        description: '1 while a route is paused because its pipeline queue is full',
      })
      .addCallback((result) => {
        for (const [route, value] of this.paused) result.observe(value, { route });
      });
    meter
      .createObservableCounter('hugot_worker_thread_crashes', {
        description: 'Inference threads that died running a batch',
      })
      .addCallback((result) => {
        if (this.engine !== undefined) result.observe(this.engine.threadCrashes);
      });
    meter
      .createObservableGauge('hugot_consumer_lag', {
        description:
          'Records not yet processed: Kafka high watermark - committed offset per partition, BullMQ waiting jobs, Redis Streams group lag',
      })
      .addCallback((result) => {
        for (const { route, of, value } of this.lag.values())
          result.observe(value, { route, ...of });
      });
    const generative = (
      result: ObservableResult<Attributes>,
      pick: (s: GenerativeStats) => number,
    ): void => {
      for (const [pipeline, engine] of this.generative)
        result.observe(pick(engine.stats()), { pipeline });
    };
    meter
      .createObservableGauge('hugot_generation_active_sequences', {
        description: 'Sequences prefilling or decoding',
      })
      .addCallback((result) => generative(result, (s) => s.active));
    meter
      .createObservableGauge('hugot_generation_kv_reserved_tokens', {
        description: 'KV-cache tokens reserved by active sequences (prompt + max new tokens)',
      })
      .addCallback((result) => generative(result, (s) => s.reservedKvTokens));
    meter
      .createObservableCounter('hugot_generation_prefix_cache_lookups', {
        description: 'Prompts that looked up the prefix cache, by result (hit: at least one block)',
      })
      .addCallback((result) => {
        for (const [pipeline, engine] of this.generative) {
          const cache = engine.stats().prefixCache;
          if (cache === undefined) continue;
          result.observe(cache.hits, { pipeline, result: 'hit' });
          result.observe(cache.lookups - cache.hits, { pipeline, result: 'miss' });
        }
      });
    const prefix = (
      result: ObservableResult<Attributes>,
      pick: (s: PrefixCacheView) => number,
    ): void => {
      for (const [pipeline, engine] of this.generative) {
        const cache = engine.stats().prefixCache;
        if (cache !== undefined) result.observe(pick(cache), { pipeline });
      }
    };
    meter
      .createObservableCounter('hugot_generation_prefix_cache_saved_tokens', {
        description: 'Prompt tokens taken from the prefix cache instead of prefilled',
      })
      .addCallback((result) => prefix(result, (s) => s.tokensSaved));
    meter
      .createObservableCounter('hugot_generation_prefix_cache_evictions', {
        description: 'Prefix cache blocks dropped to stay under maxBytes',
      })
      .addCallback((result) => prefix(result, (s) => s.evictions));
    meter
      .createObservableGauge('hugot_generation_prefix_cache_bytes', {
        description: 'Bytes of keys/values held by the prefix caches',
      })
      .addCallback((result) => prefix(result, (s) => s.bytes));
  }
}
