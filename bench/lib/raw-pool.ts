// The raw contenders: ONNX Runtime alone on pre-tokenized ids, cut into batches after a full
// length sort, handed to `workers` threads of `intraOpThreads` each, every thread holding two
// batches at once as our shard's threads do (the next one waits on the thread while it runs one).
// 'per-thread': a session per thread (onnxruntime-node); 'shared': one native session that all
// the threads run on. The threads get our shard's process settings (the young-generation cap), so
// that the comparison is of the work, not of V8's garbage collector.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { InferenceSession } from 'onnxruntime-node';
import { SharedSessions } from '../../src/runtime/native/shared-sessions.ts';
import { releaseSharedSessions } from '../../src/runtime/native/release-shared.ts';
import { BATCHES_PER_THREAD, YOUNG_GENERATION_MB } from '../../src/shards/shard.ts';

const WORKER_FILE = fileURLToPath(new URL('./raw-worker.ts', import.meta.url));

/** How `workers` threads of `intraOpThreads` each share the cores. */
export interface ThreadSplit {
  workers: number;
  intraOpThreads: number;
}

/**
 * How the length-sorted rows are cut: `rows`, fixed batches of that many; `tokens`,
 * length-bucketed batches that grow while longest x rows stays within the budget (and the rows
 * within maxRows), so short texts go many at a time and long ones few.
 */
export type BatchPolicy =
  { kind: 'rows'; size: number } | { kind: 'tokens'; budget: number; maxRows: number };

export interface RawConfig extends ThreadSplit {
  batching: BatchPolicy;
}

export function describePolicy(policy: BatchPolicy): string {
  return policy.kind === 'rows' ? `b${policy.size}` : `t${policy.budget}/${policy.maxRows}`;
}

export function describeConfig(config: RawConfig): string {
  return `${config.workers}x${config.intraOpThreads} ${describePolicy(config.batching)}`;
}

/** Every split of `cores` into workers x intra-op threads that uses all of them. */
export function threadSplits(cores: number): ThreadSplit[] {
  const splits: ThreadSplit[] = [];
  for (let workers = cores; workers >= 1; workers -= 1)
    if (cores % workers === 0) splits.push({ workers, intraOpThreads: cores / workers });
  return splits;
}

export function sortedBatches(rows: readonly number[][], batchSize: number): number[][][] {
  return cutBatches(rows, { kind: 'rows', size: batchSize });
}

export function cutBatches(rows: readonly number[][], policy: BatchPolicy): number[][][] {
  const sorted = [...rows].sort((a, b) => a.length - b.length);
  const batches: number[][][] = [];
  if (policy.kind === 'rows') {
    for (let i = 0; i < sorted.length; i += policy.size)
      batches.push(sorted.slice(i, i + policy.size));
    return batches;
  }
  let batch: number[][] = [];
  for (const row of sorted) {
    // Sorted ascending, so the row being added is the batch's longest.
    const fits = batch.length < policy.maxRows && row.length * (batch.length + 1) <= policy.budget;
    if (batch.length > 0 && !fits) {
      batches.push(batch);
      batch = [];
    }
    batch.push(row);
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/** 'pooled': 'shared', linked to the pooling graph on the session's device (raw-worker.ts). */
export type RawSessions = 'per-thread' | 'shared' | 'pooled';

/** How a raw pool runs its model: threads, their sessions and ONNX Runtime's options. */
export interface RawLayout {
  workers: number;
  /** Per thread; a shared session's pool is sized from it (raw-worker.ts). */
  intraOpThreads: number;
  executionProviders?: InferenceSession.ExecutionProviderConfig[];
  /** Default 'per-thread' (onnxruntime-node, a session per thread). */
  sessions?: RawSessions;
  /** Runs each thread keeps going on a shared session (default 1). */
  runsPerThread?: number;
  /** ONNX Runtime's memory pattern; on unless false, ONNX Runtime's own default. */
  memPattern?: boolean;
  /** The threads encode each batch's texts themselves (run() then takes texts; raw-worker.ts). */
  tokenizer?: { folder: string; maxLength: number };
}

export class RawPool {
  private readonly threads: Worker[];
  private readonly table: SharedArrayBuffer | undefined;
  private readonly inFlight: number;

  private constructor(
    threads: Worker[],
    table: SharedArrayBuffer | undefined,
    runsPerThread: number,
  ) {
    this.threads = threads;
    this.table = table;
    this.inFlight = BATCHES_PER_THREAD * runsPerThread;
  }

  static async start(onnxPath: string, layout: RawLayout): Promise<RawPool> {
    const {
      workers,
      intraOpThreads,
      executionProviders,
      sessions = 'per-thread',
      runsPerThread = 1,
      memPattern = true,
      tokenizer,
    } = layout;
    const table = sessions === 'per-thread' ? undefined : SharedSessions.allocate();
    const shared = table === undefined ? undefined : { table, workers };
    const pooled = sessions === 'pooled';
    const threads = Array.from(
      { length: workers },
      () =>
        new Worker(WORKER_FILE, {
          workerData: {
            onnxPath,
            intraOpThreads,
            executionProviders,
            shared,
            pooled,
            runsPerThread,
            memPattern,
            tokenizer,
          },
          // Our shard's threads' heap setting (src/shards/shard.ts): without it raw's threads
          // ran V8's mark-compacts ours no longer run, a handicap of ~2 % (issue 37).
          resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
        }),
    );
    await Promise.all(threads.map((thread) => nextReply(thread)));
    return new RawPool(threads, table, runsPerThread);
  }

  /** Runs every batch once (ids, or texts for a pool with a tokenizer); resolves when done. */
  async run(batches: readonly (number[][] | string[])[]): Promise<void> {
    let next = 0;
    const take = (): number[][] | string[] | undefined =>
      next < batches.length ? batches[next++] : undefined;
    await Promise.all(this.threads.map((thread) => feed(thread, take, this.inFlight)));
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((thread) => thread.terminate()));
    if (this.table !== undefined) releaseSharedSessions(this.table);
  }
}

/** Keeps `inFlight` batches on the thread until `take` runs dry. */
function feed(
  thread: Worker,
  take: () => number[][] | string[] | undefined,
  inFlight: number,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let outstanding = 0;
    const stop = (): void => {
      thread.off('message', onMessage);
      thread.off('error', onError);
    };
    const top = (): void => {
      while (outstanding < inFlight) {
        const batch = take();
        if (batch === undefined) break;
        thread.postMessage(batch);
        outstanding += 1;
      }
      if (outstanding === 0) {
        stop();
        resolve();
      }
    };
    const onMessage = (message: unknown): void => {
      if (typeof message === 'object' && message !== null && 'error' in message) {
        stop();
        reject(new Error(String(message.error)));
        return;
      }
      outstanding -= 1;
      top();
    };
    const onError = (err: Error): void => {
      stop();
      reject(err);
    };
    thread.on('message', onMessage);
    thread.on('error', onError);
    top();
  });
}

function nextReply(thread: Worker): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      thread.off('message', onMessage);
      reject(err);
    };
    const onMessage = (message: unknown): void => {
      thread.off('error', onError);
      if (typeof message === 'object' && message !== null && 'error' in message)
        reject(new Error(String(message.error)));
      else resolve();
    };
    thread.once('message', onMessage);
    thread.once('error', onError);
  });
}
