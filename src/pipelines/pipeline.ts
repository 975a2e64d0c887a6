// What every pipeline is: a task over a loaded model that turns a batch of inputs into one output
// each. Pipelines hold no thread affinity: the same object runs on the main thread in tests and
// inside worker threads in the shard pool.
import { InputError } from '../errors.ts';
import type { LoadedModel } from './runtime/model-store.ts';
import type { TextTokenizer } from './runtime/text-tokenizer.ts';

/** Where a pipeline's time went since it was built (Hugot's PipelineStatistics). */
export interface PipelineStatistics {
  /** Batches run and the inputs they held. */
  batches: number;
  inputs: number;
  /** Tokenizer calls and their wall time, in milliseconds. */
  tokenize: { calls: number; ms: number };
  /** ONNX Runtime `session.run` calls and their wall time, in milliseconds. */
  inference: { calls: number; ms: number };
}

export interface Pipeline<Input, Output> {
  readonly task: string;
  readonly model: LoadedModel;
  /** Runs the inputs as one batch; outputs are in input order. */
  run(inputs: readonly Input[]): Promise<Output[]>;
  /**
   * True when the pipeline itself runs a model that is not batch invariant one row per session
   * call, so that batchSafe (row-by-row.ts) need not split its batches.
   */
  readonly splitsRows?: boolean;
  /** Where the pipeline's time went (pipelines built on BasePipeline have it). */
  readonly statistics?: PipelineStatistics | undefined;
  /**
   * Reads what the pipeline resolves from the model folder once (generation_config.json...), so a
   * folder it cannot honour fails when the pipeline is registered, not at its first record.
   */
  ready?(): Promise<void>;
}

export function requireTokenizer(model: LoadedModel, task: string): TextTokenizer {
  if (model.tokenizer === undefined) {
    throw new InputError(`${task} needs a tokenizer, but ${model.folder} has no tokenizer.json`, {
      field: 'model',
    });
  }
  return model.tokenizer;
}

export function assertBatch(inputs: unknown, task: string): asserts inputs is readonly unknown[] {
  if (!Array.isArray(inputs))
    throw new InputError(`${task} takes an array of inputs, got ${typeof inputs}`, {
      field: 'inputs',
    });
  if (inputs.length === 0)
    throw new InputError(`${task} was given an empty batch; pass at least one input`, {
      field: 'inputs',
    });
}

export function assertString(value: unknown, task: string, field: string): asserts value is string {
  if (typeof value !== 'string') {
    throw new InputError(
      `${task}: ${field} must be a string, got ${value === null ? 'null' : typeof value}`,
      { field },
    );
  }
}
