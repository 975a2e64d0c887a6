// The task name a user writes in configuration -> the pipeline class that implements it.
import { ConfigError } from '../errors.ts';
import { CrossEncoderPipeline } from './cross-encoder.ts';
import { FeatureExtractionPipeline } from './feature-extraction.ts';
import { FillMaskPipeline } from './fill-mask.ts';
import { ImageClassificationPipeline } from './image-classification.ts';
import type { LoadedModel } from './model-store.ts';
import type { Pipeline } from './pipeline.ts';
import { batchSafe } from './row-by-row.ts';
import { QuestionAnsweringPipeline } from './question-answering.ts';
import { TextClassificationPipeline } from './text-classification.ts';
import { TextGenerationPipeline } from './text-generation.ts';
import { TokenClassificationPipeline } from './token-classification.ts';
import {
  ZeroShotClassificationPipeline,
  type ZeroShotClassificationOptions,
} from './zero-shot-classification.ts';

type Factory = (model: LoadedModel, options: unknown) => Pipeline<unknown, unknown>;

const factories = {
  featureExtraction: (model, options) => new FeatureExtractionPipeline(model, options as object),
  textClassification: (model, options) => new TextClassificationPipeline(model, options as object),
  tokenClassification: (model, options) =>
    new TokenClassificationPipeline(model, options as object),
  // The options are validated by the pipeline's schema; candidateLabels is required there.
  zeroShotClassification: (model, options) =>
    new ZeroShotClassificationPipeline(model, options as ZeroShotClassificationOptions),
  crossEncoder: (model, options) => new CrossEncoderPipeline(model, options as object),
  questionAnswering: (model, options) => new QuestionAnsweringPipeline(model, options as object),
  fillMask: (model, options) => new FillMaskPipeline(model, options as object),
  textGeneration: (model, options) => new TextGenerationPipeline(model, options as object),
  imageClassification: (model, options) =>
    new ImageClassificationPipeline(model, options as object),
} satisfies Record<string, Factory>;

export type TaskName = keyof typeof factories;
export const TASK_NAMES = Object.keys(factories) as TaskName[];

export function isTaskName(name: string): name is TaskName {
  return Object.hasOwn(factories, name);
}

export function createPipeline(
  task: string,
  model: LoadedModel,
  options: unknown = {},
): Pipeline<unknown, unknown> {
  if (!isTaskName(task)) {
    throw new ConfigError(`unknown task '${task}'; tasks: ${TASK_NAMES.join(', ')}`, {
      field: 'task',
    });
  }
  const pipeline: Pipeline<unknown, unknown> = factories[task](model, options ?? {});
  return batchSafe(pipeline);
}
