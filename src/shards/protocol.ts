// The messages between the main thread and an inference worker. Every request kind has exactly
// one response shape; errors travel serialized so that their class survives the boundary.
import type { SerializedError } from '../errors.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import type { SessionSharing } from '../runtime/runtimes.ts';
import type { CarriedEncodings } from '../pipelines/runtime/carried-encoding.ts';

export interface PipelineDefinition {
  task: string;
  model: string;
  options?: unknown;
}

/** What each worker of a shard loads once, at its first request. */
export interface WorkerSetup {
  models: Record<string, ModelSpec>;
  pipelines: Record<string, PipelineDefinition>;
  /** Folders whose tokenizer the main thread built (ModelStoreOptions.tokenizersBuilt). */
  tokenizersBuilt?: string[];
  /** The shard's table of native sessions, one per model for all its threads (the shard adds it). */
  sharing?: SessionSharing;
  /**
   * Set by the shard, which compiled every model's runtime options and every pipeline's options
   * on the main thread: the thread uses them as they are (src/options/compiled.ts).
   */
  optionsCompiled?: boolean;
}

/** One batch of a run request: the thread runs it as one pipeline call. */
export interface BatchInputs {
  inputs: unknown[];
  /** Encodings made while the inputs were priced, in input order (carried-encoding.ts). */
  encodings?: CarriedEncodings;
}

/** How one batch of a run request ended; one batch's failure leaves the others' outputs. */
export type BatchResult =
  | { kind: 'outputs'; outputs: unknown[]; computeMs: number }
  | { kind: 'failed'; error: SerializedError };

export type WorkerRequest =
  | { kind: 'warmup' }
  /** Batches of one pipeline, run one after another (batching.maxMessageTokens). */
  | { kind: 'run'; pipeline: string; batches: BatchInputs[] };

export type WorkerResponse =
  | {
      kind: 'ready';
      pipelines: string[];
      /** The pipelines whose model is not batch invariant: each row runs in a call of its own. */
      rowsAlone: string[];
      threadId: number;
    }
  /** A result per batch of the request, in its order. */
  | { kind: 'outputs'; results: BatchResult[]; threadId: number }
  /** The request as a whole failed (the thread could not load its pipelines). */
  | { kind: 'failed'; error: SerializedError; threadId: number };
