// What differs between the two benchmarked tasks: the model, how every contender truncates, how
// transformers.js is driven, and how an output becomes numbers to compare across contenders.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BatchEnginePipeline } from '../../src/engine/batch-engine.ts';
import type { FeatureExtractionResult } from '../../src/pipelines/text/feature-extraction.ts';
import type { LabelScore } from '../../src/pipelines/text/text-classification.ts';
import type { RawSearchSpace } from './raw-search.ts';
import type { Comparable, TjsRunner, TjsSetup } from './tjs-runner.ts';
import { TjsThread } from './tjs-thread.ts';
import { stageModel, type TjsDevice } from './transformers-js.ts';

export type { Comparable, TjsRunner } from './tjs-runner.ts';

export interface TaskSpec {
  name: 'embedding' | 'classification' | 'int8' | 'fp16';
  modelFolder: string;
  /** A variant of the folder's graphs (model_fp16.onnx); default its model.onnx. */
  variant?: 'fp16';
  /** Truncation length every contender applies. */
  maxLength: number;
  pipeline: Omit<BatchEnginePipeline, 'model'>;
  /**
   * What the raw calibration searches, with every thread split (bench/lib/raw-search.ts). The
   * row cap of the token-budget batches is our engine's maxBatchSize, so the search includes our
   * own layout (one single-threaded worker per core, budget 512, 32 rows).
   */
  rawSearch: Omit<RawSearchSpace, 'maxSeconds'>;
  /** transformers.js batch sizes searched, with every thread split (bench/lib/tjs-search.ts). */
  tjsBatchSizes: number[];
  ours(output: unknown): Comparable;
  /** The transformers.js pipeline that does the task. */
  tjsKind: TjsSetup['kind'];
}

/**
 * One transformers.js pipeline of `intraOpThreads` session threads on a worker thread of its own
 * (tjs-thread.ts): its pipelines run synchronously on their JS thread, so only one per thread
 * lets a pool of them use the cores (issue 37).
 */
export function transformersJs(
  spec: TaskSpec,
  intraOpThreads: number,
  device: TjsDevice = 'cpu',
): Promise<TjsRunner> {
  return TjsThread.start({ kind: spec.tjsKind, model: staged(spec), intraOpThreads, device });
}

const stagedFolders = new Map<string, string>();
/** Stages the model for transformers.js once per folder, however many pipelines load it. */
function staged(spec: TaskSpec): string {
  let name = stagedFolders.get(spec.modelFolder);
  if (name === undefined) {
    name = stageModel(spec.modelFolder, spec.maxLength);
    stagedFolders.set(spec.modelFolder, name);
  }
  return name;
}

/**
 * The same task on another model folder (the smoke run uses the tiny test fixtures), truncated
 * at that model's position limit where it is below the task's.
 */
export function onModel(spec: TaskSpec, modelFolder: string): TaskSpec {
  const config = JSON.parse(readFileSync(join(modelFolder, 'config.json'), 'utf8')) as {
    max_position_embeddings?: number;
  };
  const maxLength = Math.min(spec.maxLength, config.max_position_embeddings ?? Infinity);
  const options = (spec.pipeline.options ?? {}) as Record<string, unknown>;
  return {
    ...spec,
    modelFolder,
    maxLength,
    pipeline: {
      ...spec.pipeline,
      options: 'maxLength' in options ? { ...options, maxLength } : options,
    },
  };
}

/** A counting flag's value: undefined when not given, else a whole number of `unit`, `min` or more. */
export function wholeNumberFlag(
  flag: string,
  value: string | undefined,
  min: number,
  unit: string,
): number | undefined {
  if (value === undefined) return undefined;
  const count = Number(value);
  if (!Number.isInteger(count) || count < min)
    throw new Error(`--${flag} takes a whole number of ${unit}, ${min} or more, not '${value}'`);
  return count;
}

/** A truncation flag's value: undefined when not given, else a whole number of tokens above 0. */
export const truncationFlag = (flag: string, value: string | undefined): number | undefined =>
  wholeNumberFlag(flag, value, 1, 'tokens');

/** The same task with every contender truncating at `maxLength` tokens (the pipeline's option too). */
export function truncatedAt(spec: TaskSpec, maxLength: number): TaskSpec {
  return {
    ...spec,
    maxLength,
    pipeline: { ...spec.pipeline, options: { ...(spec.pipeline.options ?? {}), maxLength } },
  };
}

export const EMBEDDING: TaskSpec = {
  name: 'embedding',
  modelFolder: '.cache/models/all-MiniLM-L6-v2',
  // sentence-transformers' max_seq_length for this model.
  maxLength: 256,
  pipeline: {
    task: 'featureExtraction',
    options: { pooling: 'mean', normalize: true, maxLength: 256 },
  },
  rawSearch: {
    batchSizes: [1, 2, 4, 8, 16, 32, 64],
    tokenBudgets: [256, 512, 1024, 2048, 4096, 8192],
    maxRows: 32,
  },
  tjsBatchSizes: [1, 2, 4, 8, 16, 32],
  ours: (output) => ({ label: '', values: output as FeatureExtractionResult as Float32Array }),
  tjsKind: 'embedder',
};

/** The ONNX file of the spec's model that raw runs (ours takes the same through `variant`). */
export function onnxFileOf(spec: TaskSpec): string {
  return spec.variant === 'fp16' ? 'model_fp16.onnx' : 'model.onnx';
}

/**
 * MiniLM's float16 copy (model_fp16.onnx, which `npm run models:ensure` makes), for CUDA shards
 * (issue 31): embedded as the fp32 one is, on the device only (ONNX Runtime's CPU float16
 * kernels are no contender), against raw on the same file; its outputs are compared with the
 * fp32 CPU engine's.
 */
export const FP16_EMBEDDING: TaskSpec = { ...EMBEDDING, name: 'fp16', variant: 'fp16' };

/**
 * The int8 MiniLM the repository ships, embedded as the fp32 one is; compared with raw alone
 * (bench/lib/repeat-vs-raw.ts): issue 15's floor holds for it too.
 */
export const INT8_EMBEDDING: TaskSpec = {
  ...EMBEDDING,
  name: 'int8',
  modelFolder: 'models/all-MiniLM-L6-v2-int8',
};

export const CLASSIFICATION: TaskSpec = {
  name: 'classification',
  modelFolder: '.cache/models/distilbert-base-classifier',
  maxLength: 512,
  pipeline: { task: 'textClassification', options: { topK: 1 } },
  rawSearch: {
    batchSizes: [1, 2, 4, 8, 16, 32],
    tokenBudgets: [512, 1024, 2048, 4096, 8192],
    maxRows: 32,
  },
  tjsBatchSizes: [1, 2, 4, 8, 16],
  ours: (output) => {
    const [best] = output as LabelScore[];
    return { label: best?.label ?? '', values: [best?.score ?? NaN] };
  },
  tjsKind: 'classifier',
};
