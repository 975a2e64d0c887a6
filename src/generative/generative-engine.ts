// The in-process API for generation under load: submit(input) -> a stream of token events and a
// final result. Requests from any number of callers are continuously batched by a step loop on
// each generation thread (never the main thread); this side only routes requests to the least
// loaded thread, carries cancellation across, and signals admission pressure to sources.
import { availableParallelism } from 'node:os';
import { CancelledError, ClosedError, ConfigError, OverloadedError } from '../errors.ts';
import { silentLogger, type Logger } from '../logger.ts';
import { parseWithSchema } from '../options/parse.ts';
import type { Pressure } from '../batching/batch-queue.ts';
import {
  parseGenerationOptions,
  type GenerationOptions,
} from '../pipelines/generation/generation-options.ts';
import { textGenerationTask } from '../pipelines/generation/text-generation.ts';
import { GENERATIVE_TASK_NAMES, isGenerativeTask } from '../pipelines/registry.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import {
  NO_PREFIX_CACHE_STATS,
  type PrefixCacheOptions,
  type PrefixCacheStats,
} from '../pipelines/generation/prefix-cache.ts';
import { generativeEngineSchema } from './engine-options.ts';
import { GenerationStream } from './generation-stream.ts';
import { GenerationThread } from './generation-thread.ts';
import type { GenerationWorkerSetup } from './protocol.ts';
import { compileSchedulerOptions, type SchedulerOptions } from './scheduler.ts';
import { cudaDeviceId } from '../shards/device-name.ts';
import { releaseSharedSessions } from '../runtime/native/release-shared.ts';
import { SharedSessions } from '../runtime/native/shared-sessions.ts';

export interface GenerativeEngineOptions {
  model: ModelSpec;
  /** textGeneration (default) or another task of the registry's that is not 'batch' (its execution). */
  task?: string;
  /** A cohort or segment task's pipeline options (a 'decoderOnly' task takes `generation`). */
  pipelineOptions?: Record<string, unknown>;
  /** Defaults of every request; a request's own options override them field by field. */
  generation?: GenerationOptions;
  scheduler?: SchedulerOptions;
  /** 'cpu' (default) or 'cuda:<id>'. */
  device?: string;
  threads?: number;
  intraOpThreads?: number;
  maxPending?: number;
  /** Each thread's prompt-prefix KV cache; on by default, `{maxBytes: 0}` turns it off. */
  prefixCache?: PrefixCacheOptions;
  logger?: Logger;
  /** The generation thread module (tests substitute one that crashes). */
  workerFile?: string;
}

export interface GenerateOptions {
  generation?: GenerationOptions;
  /** Milliseconds from now after which the request is cancelled wherever it is. */
  timeoutMs?: number;
  /** Aborting cancels the request (e.g. its partition was revoked). */
  signal?: AbortSignal;
}

export class GenerativeEngine {
  private readonly threads: GenerationThread[] = [];
  private readonly maxPending: number;
  /** The native sessions every thread of this engine shares (one per model file). */
  private readonly sessions = SharedSessions.allocate();
  private readonly listeners = new Set<(pressure: Pressure) => void>();
  private nextId = 0;
  private paused = false;
  private closed = false;
  /** Crashed threads are replaced only once start() succeeded. */
  private running = false;

  private constructor(maxPending: number) {
    this.maxPending = maxPending;
  }

  /** Checks and compiles the options, then starts from them (startFromPlan). */
  static async start(options: GenerativeEngineOptions): Promise<GenerativeEngine> {
    const { logger, workerFile } = options;
    return await GenerativeEngine.startFromPlan(compileGenerativePlan(options), {
      ...(logger !== undefined ? { logger } : {}),
      ...(workerFile !== undefined ? { workerFile } : {}),
    });
  }

  /** Starts every thread with its model loaded; checks nothing again. */
  static async startFromPlan(
    plan: GenerativePlan,
    runtime: { logger?: Logger; workerFile?: string } = {},
  ): Promise<GenerativeEngine> {
    const logger = runtime.logger ?? silentLogger;
    const { threads, maxPending } = plan;
    const engine = new GenerativeEngine(maxPending);
    // One load of the model for all threads (and any that replace a crashed one): start-up time
    // and memory stay those of one session however many threads step on it.
    const setup = { ...plan.setup, sharing: { table: engine.sessions, threads } };
    const spawn = (i: number): GenerationThread =>
      new GenerationThread(i, {
        setup,
        logger,
        ...(runtime.workerFile !== undefined ? { workerFile: runtime.workerFile } : {}),
        onSettled: () => engine.updatePressure(),
        // A dead thread's requests have failed; a fresh thread takes the next ones.
        onCrash: () => {
          if (engine.closed || !engine.running) return;
          logger.warn({ thread: i }, 'generation thread died; starting a new one');
          engine.threads[i] = spawn(i);
        },
      });
    for (let i = 0; i < threads; i += 1) engine.threads.push(spawn(i));
    try {
      await Promise.all(engine.threads.map((t) => t.ready));
    } catch (err) {
      await Promise.all(engine.threads.map((t) => t.abort()));
      releaseSharedSessions(engine.sessions);
      throw err;
    }
    engine.running = true;
    logger.info(
      {
        device: plan.device,
        threads,
        intraOpThreads: setup.model.runtime?.intraOpThreads,
        limits: setup.limits,
        prefixCache: setup.prefixCache,
      },
      'generative engine ready',
    );
    return engine;
  }

  /** The table of the native sessions the threads share (for tests and diagnostics). */
  get sessionTable(): SharedArrayBuffer {
    return this.sessions;
  }

  /** Requests submitted and not yet finished, failed or cancelled. */
  get pending(): number {
    return this.threads.reduce((n, t) => n + t.load, 0);
  }

  /**
   * Sequences active, KV tokens reserved and the prefix caches' counts, summed over every thread's
   * last step (metrics). A replaced thread starts its counts again from zero.
   */
  stats(): { active: number; reservedKvTokens: number; prefixCache: PrefixCacheStats } {
    let active = 0;
    let reservedKvTokens = 0;
    const prefixCache = { ...NO_PREFIX_CACHE_STATS };
    for (const thread of this.threads) {
      active += thread.lastStats.active;
      reservedKvTokens += thread.lastStats.reservedKvTokens;
      for (const key of Object.keys(prefixCache) as (keyof PrefixCacheStats)[])
        prefixCache[key] += thread.lastStats.prefixCache[key];
    }
    return { active, reservedKvTokens, prefixCache };
  }

  /** 'pause' when pending reaches 3/4 of maxPending, 'resume' when it falls to 1/4. */
  onPressure(listener: (pressure: Pressure) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  submit(input: unknown, options: GenerateOptions = {}): GenerationStream {
    const stream = new GenerationStream(this.nextId++);
    if (this.closed) {
      stream.fail(new ClosedError('the generative engine is closed'));
      return stream;
    }
    if (this.pending >= this.maxPending) {
      stream.fail(
        new OverloadedError(
          `the generative engine holds ${this.pending} requests (maxPending ${this.maxPending}); retry later`,
        ),
      );
      return stream;
    }
    const { signal } = options;
    if (signal?.aborted === true) {
      stream.fail(
        new CancelledError('textGeneration: the request was cancelled before it started'),
      );
      return stream;
    }
    const thread = this.pick();
    if (thread === undefined) {
      stream.fail(new ClosedError('no generation thread is alive'));
      return stream;
    }
    thread.submit(stream, {
      kind: 'submit',
      id: stream.id,
      input,
      options: options.generation,
      deadlineAt: options.timeoutMs === undefined ? undefined : Date.now() + options.timeoutMs,
    });
    if (signal !== undefined) {
      const cancel = (): void => thread.cancel(stream.id, 'aborted');
      signal.addEventListener('abort', cancel, { once: true });
      void stream.result
        .finally(() => signal.removeEventListener('abort', cancel))
        .catch(() => undefined);
    }
    this.updatePressure();
    return stream;
  }

  /** 'drain' finishes every submitted request first; 'abort' fails them and stops at once. */
  async close(mode: 'drain' | 'abort' = 'drain'): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.threads.map((t) => (mode === 'drain' ? t.drain() : t.abort())));
    // Every thread has exited; one that died without closing its store still held a share.
    releaseSharedSessions(this.sessions);
  }

  private pick(): GenerationThread | undefined {
    let best: GenerationThread | undefined;
    for (const thread of this.threads) {
      if (thread.alive && (best === undefined || thread.load < best.load)) best = thread;
    }
    return best;
  }

  private updatePressure(): void {
    const pending = this.pending;
    let next: Pressure | undefined;
    if (!this.paused && pending >= Math.ceil(this.maxPending * 0.75)) next = 'pause';
    else if (this.paused && pending <= Math.floor(this.maxPending / 4)) next = 'resume';
    if (next === undefined) return;
    this.paused = next === 'pause';
    for (const listener of this.listeners) listener(next);
  }
}

/** A generative engine's options, checked and compiled: what startFromPlan builds from. */
export interface GenerativePlan {
  /** What every generation thread is started with. */
  setup: GenerationWorkerSetup;
  device: string;
  threads: number;
  maxPending: number;
}

export function compileGenerativePlan(
  options: Omit<GenerativeEngineOptions, 'logger' | 'workerFile'>,
): GenerativePlan {
  const { device, threads, intraOpThreads, maxPending, prefixCache } = parseWithSchema(
    generativeEngineSchema,
    {
      device: options.device,
      threads: options.threads,
      intraOpThreads: options.intraOpThreads,
      maxPending: options.maxPending,
      prefixCache: options.prefixCache,
    },
    'generative',
  );
  const limits = compileSchedulerOptions(options.scheduler, 'generative.scheduler');
  const task = options.task ?? textGenerationTask.task;
  if (!isGenerativeTask(task)) {
    throw new ConfigError(
      `the generative engine runs ${GENERATIVE_TASK_NAMES.join(', ')}; not ${task}`,
      { field: 'task' },
    );
  }
  const generation = options.generation ?? {};
  parseGenerationOptions(generation, 'generative.generation');
  const cuda = cudaDeviceId(device);
  // On a GPU the host only feeds the device: one ONNX Runtime thread per generation thread.
  const intra =
    intraOpThreads ??
    (cuda !== undefined ? 1 : Math.max(1, Math.floor(availableParallelism() / threads)));
  const runtime = {
    ...options.model.runtime,
    intraOpThreads: intra,
    ...(cuda !== undefined
      ? { executionProviders: [{ name: 'cuda' as const, deviceId: cuda }] }
      : {}),
  };
  const setup: GenerationWorkerSetup = {
    model: { ...options.model, runtime },
    task,
    pipelineOptions: options.pipelineOptions ?? {},
    generation,
    limits,
    prefixCache,
  };
  return { setup, device, threads, maxPending };
}
