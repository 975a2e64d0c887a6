// The only list of tasks. A task is one file exporting its TaskDefinition (task-definition.ts)
// and one line here; the config schema, the route's input check, the engine's batch pricing, the
// generative engine's loop and the pipeline factory all ask this registry
// (docs/pipelines.md#adding-a-pipeline).
import { audioClassificationTask } from './audio/audio-classification.ts';
import { ConfigError } from '../errors.ts';
import { crossEncoderTask } from './text/cross-encoder.ts';
import { featureExtractionTask } from './text/feature-extraction.ts';
import { fillMaskTask } from './text/fill-mask.ts';
import { depthEstimationTask } from './vision/depth-estimation.ts';
import { imageClassificationTask } from './vision/image-classification.ts';
import { imageFeatureExtractionTask } from './vision/image-feature-extraction.ts';
import { objectDetectionTask } from './vision/object-detection.ts';
import type { LoadedModel } from './runtime/model-store.ts';
import type { Pipeline } from './pipeline.ts';
import { questionAnsweringTask } from './text/question-answering.ts';
import {
  summarizationTask,
  text2textGenerationTask,
  translationTask,
} from './seq2seq/seq2seq-tasks.ts';
import { tabularTask } from './tabular/tabular.ts';
import { imageSegmentationTask } from './vision/image-segmentation.ts';
import { maskGenerationTask } from './vision/mask-generation.ts';
import { backgroundRemovalTask } from './vision/background-removal.ts';
import { batchSafe } from './row-by-row.ts';
import { didYouMean } from '../options/suggest.ts';
import type { ExecutionKind, TaskDefinition } from './task-definition.ts';
import { textClassificationTask } from './text/text-classification.ts';
import { textGenerationTask } from './generation/text-generation.ts';
import { tokenClassificationTask } from './text/token-classification.ts';
import { zeroShotImageClassificationTask } from './vision/zero-shot-image-classification.ts';
import { zeroShotObjectDetectionTask } from './vision/zero-shot-object-detection.ts';
import { zeroShotClassificationTask } from './text/zero-shot-classification.ts';
import { visualQuestionAnsweringTask } from './multimodal/visual-question-answering.ts';
import { documentQuestionAnsweringTask } from './multimodal/document-question-answering.ts';
import { imageToTextTask } from './multimodal/image-to-text.ts';
import { imageTextToTextTask } from './multimodal/image-text-to-text.ts';
import { textToAudioTask, textToSpeechTask } from './audio/text-to-speech.ts';
import { automaticSpeechRecognitionTask } from './audio/speech-recognition.ts';
import { tableQuestionAnsweringTask } from './multimodal/table-question-answering.ts';

const TASKS = [
  featureExtractionTask,
  textClassificationTask,
  tokenClassificationTask,
  zeroShotClassificationTask,
  crossEncoderTask,
  questionAnsweringTask,
  fillMaskTask,
  textGenerationTask,
  imageClassificationTask,
  tabularTask,
  objectDetectionTask,
  imageFeatureExtractionTask,
  depthEstimationTask,
  audioClassificationTask,
  imageSegmentationTask,
  maskGenerationTask,
  backgroundRemovalTask,
  zeroShotImageClassificationTask,
  zeroShotObjectDetectionTask,
  text2textGenerationTask,
  summarizationTask,
  translationTask,
  visualQuestionAnsweringTask,
  documentQuestionAnsweringTask,
  imageToTextTask,
  imageTextToTextTask,
  textToSpeechTask,
  textToAudioTask,
  automaticSpeechRecognitionTask,
  tableQuestionAnsweringTask,
] as const satisfies readonly TaskDefinition[];

const byName = new Map<string, TaskDefinition>(
  TASKS.map((definition) => [definition.task, definition]),
);

export const TASK_NAMES: readonly string[] = TASKS.map((definition) => definition.task);

/** Each task that is another task's pipeline under its own name, with that task (aliasOf). */
export const TASK_ALIASES: Readonly<Record<string, string>> = Object.fromEntries(
  TASKS.flatMap((definition: TaskDefinition) =>
    definition.aliasOf === undefined ? [] : [[definition.task, definition.aliasOf]],
  ),
);

/** Tasks a pipeline may run on a generative engine (its `generative` block), in this order. */
export const GENERATIVE_TASK_NAMES: readonly string[] = TASKS.filter(
  (definition) => definition.execution !== 'batch',
).map((definition) => definition.task);

export function isTaskName(name: string): boolean {
  return byName.has(name);
}

/** The task's definition, or undefined for a name no task has. */
export function findTask(name: string): TaskDefinition | undefined {
  return byName.get(name);
}

/** `unknown task 'x'; did you mean 'y'? tasks: ...`: the message for a name no task has. */
export function unknownTaskMessage(name: string): string {
  const tasks = TASK_NAMES.join(', ');
  const hint = didYouMean(name, TASK_NAMES);
  return hint === ''
    ? `unknown task '${name}'; tasks: ${tasks}`
    : `unknown task '${name}'${hint} (tasks: ${tasks})`;
}

/** The task's definition; a ConfigError naming the tasks for a name no task has. */
export function taskDefinition(name: string, field = 'task'): TaskDefinition {
  const definition = byName.get(name);
  if (definition === undefined) throw new ConfigError(unknownTaskMessage(name), { field });
  return definition;
}

/** A task a pipeline may run on a generative engine; false for a name no task has. */
export function isGenerativeTask(name: string): boolean {
  const execution = byName.get(name)?.execution;
  return execution !== undefined && execution !== 'batch';
}

/** How the task runs; undefined for a name no task has. */
export function executionOf(task: string): ExecutionKind | undefined {
  return byName.get(task)?.execution;
}

/** Tasks whose input a route reads as an image (docs/security.md#image-inputs). */
export function readsImages(task: string): boolean {
  return byName.get(task)?.inputKind === 'image';
}

/** Tasks whose input a route reads as an audio file (docs/security.md#audio-inputs). */
export function readsAudio(task: string): boolean {
  return byName.get(task)?.inputKind === 'audio';
}

/** Tasks whose results are embedding vectors a route may write compactly (output.vectors). */
export function writesVectors(task: string): boolean {
  return byName.get(task)?.vectorSize !== undefined;
}

/** The TASK_NAMES that write vectors, for messages. */
export const VECTOR_TASK_NAMES: readonly string[] = TASKS.filter(
  (definition: TaskDefinition) => definition.vectorSize !== undefined,
).map((definition) => definition.task);

export function createPipeline(
  task: string,
  model: LoadedModel,
  options: unknown = {},
): Pipeline<unknown, unknown> {
  return batchSafe(taskDefinition(task).create(model, options ?? {}));
}

/** Tasks whose input is an object with an `image` a route reads as an image, beside text fields. */
export function readsImageField(task: string): boolean {
  return byName.get(task)?.inputKind === 'imageText';
}
