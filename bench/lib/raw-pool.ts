// The raw contender: ONNX Runtime alone on pre-tokenized ids, cut into fixed batches after a
// full length sort, handed to `workers` threads of `intraOpThreads` each as each one frees.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const WORKER_FILE = fileURLToPath(new URL('./raw-worker.ts', import.meta.url));

export interface RawConfig {
  workers: number;
  intraOpThreads: number;
  batchSize: number;
}

export function sortedBatches(rows: readonly number[][], batchSize: number): number[][][] {
  const sorted = [...rows].sort((a, b) => a.length - b.length);
  const batches: number[][][] = [];
  for (let i = 0; i < sorted.length; i += batchSize) batches.push(sorted.slice(i, i + batchSize));
  return batches;
}

export class RawPool {
  private readonly threads: Worker[];

  private constructor(threads: Worker[]) {
    this.threads = threads;
  }

  static async start(onnxPath: string, workers: number, intraOpThreads: number): Promise<RawPool> {
    const threads = Array.from(
      { length: workers },
      () => new Worker(WORKER_FILE, { workerData: { onnxPath, intraOpThreads } }),
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
