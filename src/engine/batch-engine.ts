// The in-process API the stream worker calls: submit(pipeline, input) -> Promise<result>, over a
// batch queue per pipeline and one or more shards of inference threads.
import { resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BatchQueue, type Pressure } from '../batching/batch-queue.ts';
import { ClosedError, UnknownPipelineError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { findTask } from '../pipelines/registry.ts';
import { Shard } from '../shards/shard.ts';
import { checkModelFit } from './model-fit.ts';
import { compileEnginePlan, type EngineOptions, type EnginePlan } from './engine-plan.ts';
import { Dispatcher, type BatchDone, type DispatchStats, type Pending } from './dispatcher.ts';
import { inputCost, type CostContext, type PricedInput } from './input-cost.ts';
import { canEncode, loadPricingTokenizer, type PricingTokenizer } from './pricing-tokenizer.ts';
import { BurstEncoder } from './burst-encoder.ts';

export type { BatchEnginePipeline } from './engine-plan.ts';

export interface BatchEngineOptions extends EngineOptions {
  logger?: Logger;
  /** Inference thread module (tests substitute one that crashes). */
  workerFile?: string;
}

/** How the engine runs, apart from what it runs (the plan). */
export interface EngineRuntime {
  logger?: Logger;
  workerFile?: string;
}

export interface SubmitOptions {
  /** 0 is the most urgent; default 1. */
  priority?: number;
  /** Milliseconds from now after which the input must not run. */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Carried with the input and handed back in onBatch's BatchDone.traces (a span context). */
  trace?: unknown;
}

export class BatchEngine {
  private readonly queues = new Map<string, BatchQueue<Pending>>();
  private readonly costs = new Map<string, CostContext>();
  private readonly dispatcher: Dispatcher;
  private readonly shards: Shard[];
  private closed = false;
  private aborted = false;
  private closing: Promise<void> | undefined;
  /** Submissions still measuring their input: close('drain') must wait for them to queue. */
  private readonly admitting = new Set<Promise<unknown>>();

  private constructor(
    shards: Shard[],
    queues: Map<string, BatchQueue<Pending>>,
    costs: Map<string, CostContext>,
  ) {
    this.shards = shards;
    this.queues = queues;
    this.costs = costs;
    this.dispatcher = new Dispatcher(queues, shards, () => performance.now());
  }

  /** Checks and compiles the options, then starts from them (startFromPlan). */
  static async start(options: BatchEngineOptions): Promise<BatchEngine> {
    const { logger, workerFile } = options;
    const plan = compileEnginePlan(options);
    await checkModelFit(options.models, options.pipelines);
    return await BatchEngine.startFromPlan(plan, {
      ...(logger !== undefined ? { logger } : {}),
      ...(workerFile !== undefined ? { workerFile } : {}),
    });
  }

  /** Loads tokenizers here and every pipeline on every thread; checks nothing again. */
  static async startFromPlan(plan: EnginePlan, runtime: EngineRuntime = {}): Promise<BatchEngine> {
    const logger = runtime.logger ?? silentLogger;
    const queues = new Map<string, BatchQueue<Pending>>();
    const costs = new Map<string, CostContext>();
    const tokenizers = new Map<string, Promise<PricingTokenizer | undefined>>();
    const encoders = new Map<string, BurstEncoder>();
    // A model gets its whole tokenizer here only if one of its pipelines prices by tokens.
    const byTokens = new Set(
      [...plan.pipelines.values()]
        .filter((p) => p.batching.pricing === 'tokens')
        .map((p) => p.definition.model),
    );
    for (const [alias, { definition, model, batching }] of plan.pipelines) {
      if (!tokenizers.has(definition.model)) {
        const pricing = byTokens.has(definition.model) ? 'tokens' : 'characters';
        tokenizers.set(definition.model, loadPricingTokenizer(model.path, pricing));
      }
      const tokenizer = await tokenizers.get(definition.model);
      // One burst encoder a model: the pipelines it prices by tokens share its calls.
      let encoder: BurstEncoder | undefined;
      if (batching.pricing === 'tokens' && tokenizer !== undefined && canEncode(tokenizer)) {
        encoder = encoders.get(definition.model) ?? new BurstEncoder(tokenizer);
        encoders.set(definition.model, encoder);
      }
      costs.set(alias, {
        task: definition.task,
        tokenizer,
        options: await costOptions(definition.task, model.path, definition.options),
        pricing: batching.pricing,
        ...(encoder !== undefined ? { encoder } : {}),
      });
    }
    const setup = {
      models: plan.models,
      pipelines: Object.fromEntries([...plan.pipelines].map(([alias, p]) => [alias, p.definition])),
      tokenizersBuilt: [...encoders.keys()].map((model) => resolve(plan.models[model]?.path ?? '')),
    };
    const shards = plan.shards.map(
      (spec) =>
        new Shard({
          spec,
          setup,
          logger,
          ...(runtime.workerFile !== undefined ? { workerFile: runtime.workerFile } : {}),
        }),
    );
    let rowsAlone: Set<string>;
    try {
      rowsAlone = new Set((await Promise.all(shards.map((shard) => shard.warmup()))).flat());
    } catch (err) {
      await Promise.all(shards.map((shard) => shard.abort()));
      throw err;
    }
    // Only the threads know whether a model is batch invariant (they scan its graph as it loads).
    for (const [alias, { batching }] of plan.pipelines) {
      const budget = rowsAlone.has(alias) ? batching.rowsAloneBatchTokens : batching.maxBatchTokens;
      queues.set(alias, new BatchQueue<Pending>({ ...batching, maxBatchTokens: budget }));
    }
    logger.info(
      { shards: shards.map((s) => s.spec), pipelines: [...queues.keys()] },
      'engine ready',
    );
    return new BatchEngine(shards, queues, costs);
  }

  get stats(): DispatchStats {
    return { ...this.dispatcher.stats };
  }

  /** Hears of every finished batch (for metrics); returns the unsubscribe function. */
  onBatch(listener: (batch: BatchDone) => void): () => void {
    return this.dispatcher.onBatch(listener);
  }

  /** Listens to a pipeline's admission signal: pause sources at 'pause', resume at 'resume'. */
  onPressure(alias: string, listener: (pressure: Pressure) => void): () => void {
    return this.queue(alias).onPressure(listener);
  }

  queued(alias: string): number {
    return this.queue(alias).size;
  }

  /** The batch pipelines' names, in config order. */
  get pipelines(): string[] {
    return [...this.queues.keys()];
  }

  /** Inference threads that died under a batch, over every shard. */
  get threadCrashes(): number {
    return this.shards.reduce((sum, shard) => sum + shard.crashes, 0);
  }

  async submit<Output = unknown>(
    alias: string,
    input: unknown,
    options: SubmitOptions = {},
  ): Promise<Output> {
    if (this.closed) throw new ClosedError('the engine is closed');
    const queue = this.queue(alias);
    // A submission counts as admitting until its input is in the queue, not merely priced: a
    // price known at once ('characters') settles a few microtasks before the push, and a drain
    // that flushed in between would find the queue empty, stop the threads, and strand the input.
    const admitted = Promise.withResolvers<void>();
    this.admitting.add(admitted.promise);
    const settle = (): void => {
      this.admitting.delete(admitted.promise);
      admitted.resolve();
    };
    let cost: PricedInput;
    try {
      cost = await inputCost(input, this.costs.get(alias) as CostContext);
      if (this.aborted) throw new ClosedError('the engine was aborted');
    } catch (err) {
      settle();
      throw err;
    }
    const submitted = performance.now();
    return new Promise<Output>((resolve, reject) => {
      try {
        queue.push(
          {
            input,
            ...(cost.carried !== undefined ? { carried: cost.carried } : {}),
            resolve: resolve as (o: unknown) => void,
            reject,
            ...(options.trace !== undefined ? { trace: options.trace } : {}),
          },
          cost.tokens,
          submitted,
          {
            rows: cost.rows,
            ...(options.priority !== undefined ? { priority: options.priority } : {}),
            ...(options.timeoutMs !== undefined ? { deadline: submitted + options.timeoutMs } : {}),
            ...(options.signal !== undefined ? { signal: options.signal } : {}),
          },
        );
      } finally {
        settle();
      }
      this.dispatcher.pump();
    });
  }

  /**
   * 'drain' runs everything queued and in flight, then stops the threads; 'abort' fails what is
   * queued, lets the batches already on a thread finish (stopping a thread inside an ONNX run
   * aborts the process natively), then stops the threads. An abort during a drain gives up the
   * drain's queue; every call resolves when the threads have stopped.
   */
  close(mode: 'drain' | 'abort' = 'drain'): Promise<void> {
    this.closed = true;
    if (mode === 'abort') this.failQueued();
    this.closing ??= mode === 'drain' ? this.drainAll() : this.abortAll();
    return this.closing;
  }

  /**
   * Fails what is queued and refuses new inputs, and changes nothing else: the batches on the
   * threads finish and close() still stops the shards the usual way. Shutdown calls this at half
   * its budget, before it knows whether the drain will be in time.
   */
  giveUpQueued(): void {
    this.closed = true;
    this.failQueued();
  }

  private async drainAll(): Promise<void> {
    await Promise.allSettled(this.admitting);
    this.dispatcher.flush();
    await this.dispatcher.whenIdle();
    this.dispatcher.stop();
    await Promise.all(this.shards.map((shard) => shard.drain()));
  }

  private async abortAll(): Promise<void> {
    this.dispatcher.stop();
    await Promise.all(this.shards.map((shard) => shard.abort()));
  }

  private failQueued(): void {
    this.aborted = true;
    for (const [alias, queue] of this.queues) {
      for (const item of queue.drainAll())
        item.payload.reject(
          new ClosedError(`the engine was aborted before '${alias}' ran this input`),
        );
    }
  }

  private queue(alias: string): BatchQueue<Pending> {
    const queue = this.queues.get(alias);
    if (queue === undefined) throw UnknownPipelineError.forAlias(alias, [...this.queues.keys()]);
    return queue;
  }
}

/** The options inputs are priced with: the declared ones, plus what the task reads from the folder. */
export async function costOptions(
  task: string,
  path: string,
  options: unknown,
): Promise<Record<string, unknown>> {
  const declared = (options ?? {}) as Record<string, unknown>;
  const settle = findTask(task)?.costOptions;
  return settle === undefined ? declared : settle(declared, path);
}
