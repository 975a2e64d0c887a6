// What a generation thread drives, whatever the model: requests in, one step at a time, token and
// end events out. The decoder-only loop (generation-loop.ts) and the encoder–decoder one
// (seq2seq-loop.ts) both are one, so the thread, its protocol and the engine serve both.
import type { GenerationOptions } from '../pipelines/generation/generation-options.ts';
import type { LoopStats, SequenceEvent } from './protocol.ts';
import type { CancelReason } from './sequence.ts';

export interface SubmitRequest {
  id: number;
  input: unknown;
  options?: GenerationOptions | undefined;
  deadlineAt?: number | undefined;
}

export interface StepLoop {
  readonly idle: boolean;
  stats(): LoopStats;
  /** Queues a request; an invalid one comes back at once as its failed event. */
  submit(request: SubmitRequest): Promise<SequenceEvent | undefined>;
  /** Marks a request cancelled; it leaves at the start of the next step. */
  cancel(id: number, reason: CancelReason): void;
  /** One step; its token, done and failed events in order. Nothing to do: []. */
  step(): Promise<SequenceEvent[]>;
  /** Frees what it holds on the device (a resident prefix cache), once drained and idle. */
  close?(): Promise<void>;
}
