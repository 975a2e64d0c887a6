// The transformers.js contender's side of a worker thread (tjs-worker.ts): a TjsRunner whose
// pipeline runs on a thread of its own, so that a pool of them uses the cores as threads, not as
// turns on the main thread. One batch at a time per thread, as TjsPool hands them out.
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Comparable, TjsRunner, TjsSetup } from './tjs-runner.ts';

const WORKER_FILE = fileURLToPath(new URL('./tjs-worker.ts', import.meta.url));

type Reply = 'ready' | 'closed' | { outputs: Comparable[] } | { error: string };

export class TjsThread implements TjsRunner {
  private readonly worker: Worker;

  private constructor(worker: Worker) {
    this.worker = worker;
  }

  static async start(setup: TjsSetup): Promise<TjsThread> {
    const worker = new Worker(WORKER_FILE, { workerData: setup });
    try {
      await reply(worker);
    } catch (err) {
      await worker.terminate();
      throw err;
    }
    return new TjsThread(worker);
  }

  async run(texts: string[]): Promise<Comparable[]> {
    this.worker.postMessage({ texts });
    const answer = await reply(this.worker);
    if (typeof answer !== 'object' || !('outputs' in answer))
      throw new Error(`transformers.js thread answered ${JSON.stringify(answer)} to a batch`);
    return answer.outputs;
  }

  async close(): Promise<void> {
    this.worker.postMessage('close');
    try {
      await reply(this.worker);
    } finally {
      await this.worker.terminate();
    }
  }
}

/** The thread's next reply; an {error} reply or the thread's own error rejects. */
function reply(worker: Worker): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      worker.off('message', onMessage);
      reject(err);
    };
    const onMessage = (message: Reply): void => {
      worker.off('error', onError);
      if (typeof message === 'object' && 'error' in message) reject(new Error(message.error));
      else resolve(message);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
  });
}
