// The main thread's handle on one generation worker: it posts requests, routes each step's events
// to the requests' streams, and fails every pending request when the thread dies, so no caller
// waits forever.
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { ClosedError, WorkerCrashedError, deserializeError } from '../errors.ts';
import { compileCacheEnv } from '../shards/compile-cache.ts';
import type { Logger } from '../logger.ts';
import { NO_PREFIX_CACHE_STATS } from '../pipelines/generation/prefix-cache.ts';
import type { GenerationStream } from './generation-stream.ts';
import type {
  FromWorker,
  GenerationWorkerSetup,
  LoopStats,
  SequenceEvent,
  ToWorker,
} from './protocol.ts';

export const GENERATION_WORKER = fileURLToPath(new URL('./generation-worker.ts', import.meta.url));

export interface GenerationThreadOptions {
  setup: GenerationWorkerSetup;
  logger: Logger;
  /** Called whenever requests settle (pressure may have changed). */
  onSettled: () => void;
  /** Called once when the thread exits without being asked to. */
  onCrash: () => void;
  workerFile?: string;
}

export class GenerationThread {
  readonly index: number;
  readonly ready: Promise<void>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, GenerationStream>();
  private readonly logger: Logger;
  private readonly onSettled: () => void;
  private drained: (() => void) | undefined;
  private exited = false;
  private stopping = false;
  lastStats: LoopStats = {
    waiting: 0,
    active: 0,
    reservedKvTokens: 0,
    batchKvTokens: 0,
    prefixCache: NO_PREFIX_CACHE_STATS,
  };

  constructor(index: number, options: GenerationThreadOptions) {
    this.index = index;
    this.logger = options.logger;
    this.onSettled = options.onSettled;
    this.worker = new Worker(options.workerFile ?? GENERATION_WORKER, {
      workerData: options.setup,
      name: `generation-${index}`,
      env: compileCacheEnv(),
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.on('message', (message: FromWorker) => {
        if (message.kind === 'ready') resolve();
        else if (message.kind === 'fatal') {
          const error = deserializeError(message.error);
          reject(error);
          this.failAll(error);
        } else this.receive(message);
      });
      this.worker.on('error', (err: Error) => {
        this.logger.error({ err, thread: index }, 'generation thread failed');
        reject(err);
      });
      this.worker.on('exit', (code) => {
        this.exited = true;
        const error = this.stopping
          ? new ClosedError('the generative engine closed before this request finished')
          : new WorkerCrashedError(`generation thread ${index} exited (code ${code})`);
        reject(error);
        this.failAll(error);
        this.drained?.();
        if (!this.stopping) options.onCrash();
      });
    });
    this.ready.catch(() => undefined);
  }

  get load(): number {
    return this.pending.size;
  }

  get alive(): boolean {
    return !this.exited;
  }

  submit(stream: GenerationStream, message: Extract<ToWorker, { kind: 'submit' }>): void {
    this.pending.set(stream.id, stream);
    this.post(message);
  }

  cancel(id: number, reason: 'aborted' | 'deadline'): void {
    if (this.pending.has(id)) this.post({ kind: 'cancel', id, reason });
  }

  /** Finishes every pending request, then lets the thread exit. */
  async drain(): Promise<void> {
    if (this.exited) return;
    this.stopping = true;
    const done = new Promise<void>((resolve) => (this.drained = resolve));
    this.post({ kind: 'drain' });
    await done;
  }

  /**
   * Fails every pending request and stops the thread after its current step: terminating a
   * thread inside session.run aborts the whole process natively (Napi::Error).
   */
  async abort(): Promise<void> {
    this.stopping = true;
    const ids = [...this.pending.keys()];
    this.failAll(new ClosedError('the generative engine was aborted'));
    if (this.exited) return;
    for (const id of ids) this.post({ kind: 'cancel', id, reason: 'aborted' });
    const done = new Promise<void>((resolve) => (this.drained = resolve));
    this.post({ kind: 'drain' });
    await done;
  }

  private post(message: ToWorker): void {
    this.worker.postMessage(message);
  }

  private receive(message: Exclude<FromWorker, { kind: 'ready' } | { kind: 'fatal' }>): void {
    if (message.kind === 'drained') return;
    this.lastStats = message.stats;
    const receivedAt = performance.now();
    for (const event of message.events) this.deliver(event, receivedAt);
  }

  private deliver(event: SequenceEvent, receivedAt: number): void {
    const stream = this.pending.get(event.id);
    if (stream === undefined) return;
    switch (event.kind) {
      case 'token':
        stream.push({
          type: 'token',
          tokenId: event.tokenId,
          text: event.text,
          ...(event.audio !== undefined ? { audio: event.audio } : {}),
          receivedAt,
        });
        return;
      case 'done':
        stream.push({ type: 'done', result: event.result, receivedAt });
        break;
      case 'failed':
        stream.fail(deserializeError(event.error));
        break;
    }
    this.pending.delete(event.id);
    this.onSettled();
  }

  private failAll(error: Error): void {
    if (this.pending.size === 0) return;
    for (const stream of this.pending.values()) stream.fail(error);
    this.pending.clear();
    this.onSettled();
  }
}
