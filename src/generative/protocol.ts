// Messages between the main thread and a generation worker, which owns one ONNX session and runs
// the step loop. Requests cross as plain data; each step's token events for every sequence travel
// together in one message, so the message rate follows steps, not tokens.
import type { SerializedError } from '../errors.ts';
import type { GenerationOptions } from '../pipelines/generation/generation-options.ts';
import type { PrefixCacheLimits, PrefixCacheStats } from '../pipelines/generation/prefix-cache.ts';
import type { AudioChunk } from '../pipelines/generation/segmentwise.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import type { SessionSharing } from '../runtime/runtimes.ts';
import type { EngineResult } from './engine-event.ts';
import type { SchedulerLimits } from './scheduler.ts';

/** What a worker loads once, at start. */
export interface GenerationWorkerSetup {
  model: ModelSpec;
  /** textGeneration (decoder-only), or an encoder–decoder task of the registry's. */
  task: string;
  /** An encoder–decoder pipeline's options (textGeneration's are `generation`). */
  pipelineOptions: Record<string, unknown>;
  /** Options every request starts from; a request's own options override them field by field. */
  generation: GenerationOptions;
  limits: SchedulerLimits;
  prefixCache: PrefixCacheLimits;
  /**
   * The engine's table of native sessions: every generation thread runs on one session of the
   * model (ONNX Runtime's Run is thread-safe), so the model is loaded and held once, not once
   * per thread. Without it (or on onnxruntime-node's binding) each thread loads its own.
   */
  sharing?: SessionSharing;
}

export type ToWorker =
  | {
      kind: 'submit';
      id: number;
      /** A prompt string, chat messages, or {messages}. */
      input: unknown;
      options: GenerationOptions | undefined;
      /** Epoch milliseconds (Date.now()), comparable across threads. */
      deadlineAt: number | undefined;
    }
  | { kind: 'cancel'; id: number; reason: 'aborted' | 'deadline' }
  /** Finish what was submitted, then exit. */
  | { kind: 'drain' };

export type SequenceEvent =
  | {
      kind: 'token';
      id: number;
      tokenId: number;
      text: string;
      index: number;
      /** Speech synthesis: waveform samples that became final at this step. */
      audio?: AudioChunk;
    }
  | { kind: 'done'; id: number; result: EngineResult }
  | { kind: 'failed'; id: number; error: SerializedError };

export interface LoopStats {
  waiting: number;
  active: number;
  reservedKvTokens: number;
  /** Rows x past length of the decode batch, padding included. */
  batchKvTokens: number;
  /** The thread's prefix cache so far (zeros when it is off). */
  prefixCache: PrefixCacheStats;
}

export type FromWorker =
  | { kind: 'ready' }
  | { kind: 'fatal'; error: SerializedError }
  | { kind: 'events'; events: SequenceEvent[]; stats: LoopStats }
  | { kind: 'drained' };
