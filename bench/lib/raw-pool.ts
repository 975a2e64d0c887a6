// The raw contender: ONNX Runtime alone on pre-tokenized ids, cut into batches after a full
// length sort, handed to `workers` threads of `intraOpThreads` each as each one frees.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { InferenceSession } from 'onnxruntime-node';

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

export class RawPool {
  private readonly threads: Worker[];

  private constructor(threads: Worker[]) {
    this.threads = threads;
  }

  static async start(
    onnxPath: string,
    workers: number,
    intraOpThreads: number,
    executionProviders?: InferenceSession.ExecutionProviderConfig[],
  ): Promise<RawPool> {
    const threads = Array.from(
      { length: workers },
      () =>
        new Worker(WORKER_FILE, {
          workerData: { onnxPath, intraOpThreads, executionProviders },
        }),
    );
    await Promise.all(threads.map((thread) => nextReply(thread)));
    return new RawPool(threads);
  }

  /** Runs every batch once; resolves when the last one is done. */
  async run(batches: readonly number[][][]): Promise<void> {
    let next = 0;
    await Promise.all(
      this.threads.map(async (thread) => {
        while (next < batches.length) {
          const batch = batches[next++] as number[][];
          const reply = nextReply(thread);
          thread.postMessage(batch);
          await reply;
        }
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.threads.map((thread) => thread.terminate()));
  }
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
