// Every task by name, each as the import of its module: the one list of tasks. The registry
// (registry.ts) imports them all for the main thread, which validates every pipeline's options;
// an inference or generation thread imports only its own pipelines' tasks (loadTask), so that
// the other tasks' modules never enter its isolate
// (docs/performance.md#task-modules-per-thread-one-tokenizer-instance). Adding a task:
// docs/pipelines.md#adding-a-pipeline.
import { ConfigError } from '../errors.ts';
import { didYouMean } from '../options/suggest.ts';
import type { TaskDefinition } from './task-definition.ts';

type TaskModule = () => Promise<TaskDefinition>;

// The order is the registry's, and so that of every list of tasks a message prints.
const TASK_MODULES: Readonly<Record<string, TaskModule>> = {
  featureExtraction: async () =>
    (await import('./text/feature-extraction.ts')).featureExtractionTask,
  textClassification: async () =>
    (await import('./text/text-classification.ts')).textClassificationTask,
  tokenClassification: async () =>
    (await import('./text/token-classification.ts')).tokenClassificationTask,
  zeroShotClassification: async () =>
    (await import('./text/zero-shot-classification.ts')).zeroShotClassificationTask,
  crossEncoder: async () => (await import('./text/cross-encoder.ts')).crossEncoderTask,
  questionAnswering: async () =>
    (await import('./text/question-answering.ts')).questionAnsweringTask,
  fillMask: async () => (await import('./text/fill-mask.ts')).fillMaskTask,
  textGeneration: async () => (await import('./generation/text-generation.ts')).textGenerationTask,
  imageClassification: async () =>
    (await import('./vision/image-classification.ts')).imageClassificationTask,
  tabular: async () => (await import('./tabular/tabular.ts')).tabularTask,
  objectDetection: async () => (await import('./vision/object-detection.ts')).objectDetectionTask,
  imageFeatureExtraction: async () =>
    (await import('./vision/image-feature-extraction.ts')).imageFeatureExtractionTask,
  depthEstimation: async () => (await import('./vision/depth-estimation.ts')).depthEstimationTask,
  audioClassification: async () =>
    (await import('./audio/audio-classification.ts')).audioClassificationTask,
  imageSegmentation: async () =>
    (await import('./vision/image-segmentation.ts')).imageSegmentationTask,
  maskGeneration: async () => (await import('./vision/mask-generation.ts')).maskGenerationTask,
  backgroundRemoval: async () =>
    (await import('./vision/background-removal.ts')).backgroundRemovalTask,
  zeroShotImageClassification: async () =>
    (await import('./vision/zero-shot-image-classification.ts')).zeroShotImageClassificationTask,
  zeroShotObjectDetection: async () =>
    (await import('./vision/zero-shot-object-detection.ts')).zeroShotObjectDetectionTask,
  text2textGeneration: async () =>
    (await import('./seq2seq/seq2seq-tasks.ts')).text2textGenerationTask,
  summarization: async () => (await import('./seq2seq/seq2seq-tasks.ts')).summarizationTask,
  translation: async () => (await import('./seq2seq/seq2seq-tasks.ts')).translationTask,
  visualQuestionAnswering: async () =>
    (await import('./multimodal/visual-question-answering.ts')).visualQuestionAnsweringTask,
  documentQuestionAnswering: async () =>
    (await import('./multimodal/document-question-answering.ts')).documentQuestionAnsweringTask,
  imageToText: async () => (await import('./multimodal/image-to-text.ts')).imageToTextTask,
  imageTextToText: async () =>
    (await import('./multimodal/image-text-to-text.ts')).imageTextToTextTask,
  textToSpeech: async () => (await import('./audio/text-to-speech.ts')).textToSpeechTask,
  textToAudio: async () => (await import('./audio/text-to-speech.ts')).textToAudioTask,
  automaticSpeechRecognition: async () =>
    (await import('./audio/speech-recognition.ts')).automaticSpeechRecognitionTask,
  tableQuestionAnswering: async () =>
    (await import('./multimodal/table-question-answering.ts')).tableQuestionAnsweringTask,
};

export const TASK_NAMES: readonly string[] = Object.keys(TASK_MODULES);

/** `unknown task 'x'; did you mean 'y'? tasks: ...`: the message for a name no task has. */
export function unknownTaskMessage(name: string): string {
  const tasks = TASK_NAMES.join(', ');
  const hint = didYouMean(name, TASK_NAMES);
  return hint === ''
    ? `unknown task '${name}'; tasks: ${tasks}`
    : `unknown task '${name}'${hint} (tasks: ${tasks})`;
}

/** The task's definition, importing its module; a ConfigError naming the tasks for a name no task has. */
export async function loadTask(name: string, field = 'task'): Promise<TaskDefinition> {
  const load = Object.hasOwn(TASK_MODULES, name) ? TASK_MODULES[name] : undefined;
  if (load === undefined) throw new ConfigError(unknownTaskMessage(name), { field });
  const definition = await load();
  if (definition.task !== name)
    throw new Error(`task-modules.ts lists '${name}' for the definition of '${definition.task}'`);
  return definition;
}
