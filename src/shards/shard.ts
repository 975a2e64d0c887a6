// One shard: a piscina pool of inference threads that all load the same pipelines. A message
// carries one batch or several (batching.maxMessageTokens). The batches that die with their
// thread (a native crash, an exit; a thread holds up to two messages) are each retried once, alone,
// on another thread; one that dies again fails with WorkerCrashedError. piscina replaces dead
// threads itself.
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { ClosedError, WorkerCrashedError, deserializeError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { compileCacheEnv } from './compile-cache.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import { compileTaskOptions } from '../pipelines/registry.ts';
import { compileRuntimeOptions } from '../runtime/runtime-options.ts';
import { releaseSharedSessions } from '../runtime/native/release-shared.ts';
import { SharedSessions } from '../runtime/native/shared-sessions.ts';
import type {
  BatchInputs,
  PipelineDefinition,
  WorkerRequest,
  WorkerResponse,
  WorkerSetup,
} from './protocol.ts';
import type { ShardSpec } from './shard-spec.ts';
import type { CarriedEncodings } from '../pipelines/runtime/carried-encoding.ts';

type RunRequest = Extract<WorkerRequest, { kind: 'run' }>;

/**
 * A thread is handed its next message (a batch, or several of a backlog) while it runs one: the
 * next batch's tokenization (on libuv's pool) then overlaps the running session.run, and the
 * thread never idles waiting for the main thread to pass it work. Measured on int8 MiniLM at
 * batch 1 (docs/performance.md): the thread's idle trip between batches was worth ~3 % of
 * throughput.
 */
export const BATCHES_PER_THREAD = 2;

/**
 * The young generation of an inference thread's heap, in MB. V8 sizes it from the machine (16 MB
 * semi-spaces here) and starts old-generation marking as soon as the heap's headroom is no larger
 * than that: with ONNX Runtime's output buffers churning, a thread then ran one mark-compact every
 * ~25 records, each marking the whole heap on V8's helper threads (~0.6 core-ms a record on int8
 * MiniLM, 2 % of its throughput; issue 15). Capped, the young garbage dies in scavenges and no
 * mark-compact ran in 500 records; at 8 MB and above they were back.
 */
export const YOUNG_GENERATION_MB = 4;

const DEFAULT_WORKER = fileURLToPath(new URL('./inference-worker.ts', import.meta.url));
/** What piscina loads; it imports the handler (see thread-entry.ts for why). */
const THREAD_ENTRY = fileURLToPath(new URL('./thread-entry.ts', import.meta.url));

export interface ShardOptions {
  spec: ShardSpec;
  setup: WorkerSetup;
  logger: Logger;
  /** The worker module; tests pass their own to make threads crash on purpose. */
  workerFile?: string;
}

export interface BatchRun {
  outputs: unknown[];
  computeMs: number;
}

/** A batch of a message, once it ran: its outputs, or why it has none. */
export type SettledBatch = BatchRun | { error: unknown };

export class Shard {
  readonly spec: ShardSpec;
  /**
   * Messages (of one batch or several) it accepts at once: BATCHES_PER_THREAD per run a thread
   * keeps going (one running, one waiting).
   */
  readonly capacity: number;
  /** Messages and retried batches cut short by their thread's death. */
  crashes = 0;
  private running = 0;
  private closed = false;
  private readonly pool: Piscina<WorkerRequest, WorkerResponse>;
  private readonly logger: Logger;
  /** The native sessions the threads share; the shard frees them once its threads are gone. */
  private readonly sessions = SharedSessions.allocate();

  constructor(options: ShardOptions) {
    this.spec = options.spec;
    const perThread = BATCHES_PER_THREAD * options.spec.runsPerThread;
    this.capacity = options.spec.threads * perThread;
    this.logger = options.logger;
    this.pool = new Piscina({
      filename: THREAD_ENTRY,
      name: 'default',
      minThreads: options.spec.threads,
      maxThreads: options.spec.threads,
      idleTimeout: Infinity,
      concurrentTasksPerWorker: perThread,
      // Nothing reads piscina's run and wait-time histograms; they cost the main thread a
      // little on every batch.
      recordTiming: false,
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      env: compileCacheEnv(),
      // close() must wait out a running batch however long it takes: piscina destroys the
      // threads at this timeout, and a thread terminated inside session.run aborts the whole
      // process natively ("terminate called after throwing an instance of 'Napi::Error'").
      closeTimeout: 2 ** 31 - 1,
      workerData: {
        handlerFile: options.workerFile ?? DEFAULT_WORKER,
        ...shardSetup(options.setup, options.spec),
        sharing: {
          table: this.sessions,
          threads: options.spec.threads,
          runsPerThread: options.spec.runsPerThread,
        },
      },
    });
    this.pool.on('error', (err: unknown) =>
      this.logger.error({ err, shard: this.spec.name }, 'inference thread failed'),
    );
  }

  /** The table of the native sessions the shard's threads share (for tests and diagnostics). */
  get sessionTable(): SharedArrayBuffer {
    return this.sessions;
  }

  get inFlight(): number {
    return this.running;
  }

  get hasRoom(): boolean {
    return !this.closed && this.running < this.capacity;
  }

  /**
   * Loads every pipeline on every thread before traffic arrives; resolves to the pipelines whose
   * rows run alone (a model that is not batch invariant) on any thread.
   */
  async warmup(): Promise<string[]> {
    const replies = await Promise.all(
      Array.from({ length: this.spec.threads }, () => this.pool.run({ kind: 'warmup' })),
    );
    const rowsAlone = new Set<string>();
    for (const reply of replies) {
      if (reply.kind === 'failed') throw deserializeError(reply.error);
      if (reply.kind === 'ready') for (const alias of reply.rowsAlone) rowsAlone.add(alias);
    }
    return [...rowsAlone];
  }

  async run(pipeline: string, inputs: unknown[], encodings?: CarriedEncodings): Promise<BatchRun> {
    const [settled] = await this.runBatches(pipeline, [
      { inputs, ...(encodings !== undefined ? { encodings } : {}) },
    ]);
    if (settled === undefined || 'error' in settled) throw settled?.error;
    return settled;
  }

  /**
   * Runs several batches of one pipeline as one message to a thread, one after another; each
   * settles on its own (one's InputError leaves the others' outputs). They take one place of the
   * shard's capacity. Rejects only when the shard is closed.
   */
  async runBatches(pipeline: string, batches: BatchInputs[]): Promise<SettledBatch[]> {
    if (this.closed) throw new ClosedError(`shard ${this.spec.name} is closed`);
    this.running += 1;
    try {
      return await this.attempt({ kind: 'run', pipeline, batches });
    } finally {
      this.running -= 1;
    }
  }

  /** Waits for in-flight batches, then stops the threads. */
  async drain(): Promise<void> {
    this.closed = true;
    await this.pool.close();
    releaseSharedSessions(this.sessions);
  }

  /**
   * Stops taking batches: one not yet on a thread fails, those on a thread finish (an ONNX run
   * cannot be interrupted safely, see closeTimeout above), then the threads stop.
   */
  async abort(): Promise<void> {
    this.closed = true;
    await this.pool.close({ force: true });
    releaseSharedSessions(this.sessions);
  }

  private async attempt(request: RunRequest): Promise<SettledBatch[]> {
    const { pipeline, batches } = request;
    let reply: WorkerResponse;
    try {
      reply = await this.pool.run(request);
    } catch (first) {
      if (this.closed)
        throw new ClosedError(`shard ${this.spec.name} closed while a batch was running`, {
          cause: first,
        });
      this.crashes += 1;
      this.logger.warn(
        { err: first, shard: this.spec.name, pipeline, batches: batches.length },
        'inference thread died; retrying its batches once each',
      );
      // A thread holds two messages, so the first death may have been the other's doing, and a
      // message of several batches may hold the culprit beside innocent ones: each batch is
      // retried in a message of its own, so that only a batch that kills a thread by itself fails.
      return Promise.all(batches.map((batch) => this.retryAlone(pipeline, batch)));
    }
    return settle(reply, batches.length);
  }

  private async retryAlone(pipeline: string, batch: BatchInputs): Promise<SettledBatch> {
    let reply: WorkerResponse;
    try {
      // piscina puts a task that carries a signal only on an idle thread and gives that thread
      // nothing else meanwhile, so a second death is this batch's own.
      reply = await this.pool.run(
        { kind: 'run', pipeline, batches: [batch] },
        { signal: new AbortController().signal },
      );
    } catch (second) {
      if (this.closed)
        return {
          error: new ClosedError(`shard ${this.spec.name} closed while a batch was running`, {
            cause: second,
          }),
        };
      this.crashes += 1;
      return {
        error: new WorkerCrashedError(
          `the inference thread died twice running a batch of ${batch.inputs.length} for '${pipeline}' on shard ${this.spec.name}: ${errorMessage(second)}`,
          { cause: second },
        ),
      };
    }
    return settle(reply, 1)[0] as SettledBatch;
  }
}

/** Each batch's outputs or error, from a thread's reply to a run request of `count` batches. */
function settle(reply: WorkerResponse, count: number): SettledBatch[] {
  if (reply.kind === 'failed') {
    const error = deserializeError(reply.error);
    return Array.from({ length: count }, () => ({ error }));
  }
  if (reply.kind !== 'outputs' || reply.results.length !== count)
    throw new Error(`unexpected reply '${reply.kind}' to a run request of ${count} batches`);
  return reply.results.map((result) =>
    result.kind === 'outputs'
      ? { outputs: result.outputs, computeMs: result.computeMs }
      : { error: deserializeError(result.error) },
  );
}

/**
 * What the shard's threads load: every option compiled here, on the main thread, so that a thread
 * never parses (nor loads zod: src/options/compiled.ts); a bad option fails the shard's start.
 */
function shardSetup(setup: WorkerSetup, spec: ShardSpec): WorkerSetup {
  const models: Record<string, ModelSpec> = {};
  for (const [alias, model] of Object.entries(setup.models)) {
    models[alias] = {
      ...model,
      runtime: compileRuntimeOptions(
        {
          ...model.runtime,
          intraOpThreads: spec.intraOpThreads,
          executionProviders: spec.executionProviders,
        },
        `models.${alias}.runtime`,
      ),
    };
  }
  const pipelines: Record<string, PipelineDefinition> = {};
  for (const [alias, pipeline] of Object.entries(setup.pipelines))
    pipelines[alias] = {
      ...pipeline,
      options: compileTaskOptions(pipeline.task, pipeline.options, `pipelines.${alias}.options`),
    };
  return { ...setup, models, pipelines, optionsCompiled: true };
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
