// The caller's side of one submitted request: an async iterable of token events ending with
// `done` (or throwing the request's error), plus `result` for callers that only want the end.
// Events are buffered, so a caller may start iterating late or never.
import type { EngineEvent, EngineResult } from './engine-event.ts';

export type StreamEvent = EngineEvent & {
  /** performance.now() on the receiving thread when the event arrived (for latency metrics). */
  receivedAt: number;
};

export class GenerationStream implements AsyncIterable<StreamEvent> {
  readonly id: number;
  readonly result: Promise<EngineResult>;
  private readonly buffered: StreamEvent[] = [];
  private failure: { error: unknown } | undefined;
  private finished = false;
  private waiter: (() => void) | undefined;
  private settle!: { resolve: (r: EngineResult) => void; reject: (e: unknown) => void };

  constructor(id: number) {
    this.id = id;
    this.result = new Promise<EngineResult>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // The result promise may go unobserved by callers who iterate; its rejection is theirs.
    this.result.catch(() => undefined);
  }

  get settled(): boolean {
    return this.finished;
  }

  /** @internal the engine's delivery of one event. */
  push(event: StreamEvent): void {
    if (this.finished) return;
    this.buffered.push(event);
    if (event.type === 'done') {
      this.finished = true;
      this.settle.resolve(event.result);
    }
    this.notify();
  }

  /** @internal the engine's delivery of the request's failure. */
  fail(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.failure = { error };
    this.settle.reject(error);
    this.notify();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
    for (;;) {
      const next = this.buffered.shift();
      if (next !== undefined) {
        yield next;
        if (next.type === 'done') return;
        continue;
      }
      if (this.failure !== undefined) throw this.failure.error;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
  }

  private notify(): void {
    const resolve = this.waiter;
    this.waiter = undefined;
    resolve?.();
  }
}
