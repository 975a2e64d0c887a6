// Every task's definition at once, for the main thread: the config schema, the route's input
// check, the engine's batch pricing and the generative engine ask it synchronously. The list
// itself is task-modules.ts's (docs/pipelines.md#adding-a-pipeline); threads that run pipelines
// import only their own tasks from there.
import { ConfigError } from '../errors.ts';
import { parseWithSchema } from '../options/parse.ts';
import type { LoadedModel } from './runtime/model-store.ts';
import type { Pipeline } from './pipeline.ts';
import { batchSafe } from './row-by-row.ts';
import type { ExecutionKind, TaskDefinition } from './task-definition.ts';
import { loadTask, TASK_NAMES, unknownTaskMessage } from './task-modules.ts';

export { TASK_NAMES, unknownTaskMessage };

const TASKS: readonly TaskDefinition[] = await Promise.all(
  TASK_NAMES.map((name) => loadTask(name)),
);

const byName = new Map<string, TaskDefinition>(
  TASKS.map((definition) => [definition.task, definition]),
);

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

/** A pipeline's options validated and filled with their defaults, as its thread receives them. */
export function compileTaskOptions(task: string, options: unknown, path = 'options'): unknown {
  return parseWithSchema(taskDefinition(task).optionsSchema, options ?? {}, path);
}

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
