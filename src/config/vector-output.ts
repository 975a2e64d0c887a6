// What a route's `output.vectors` may ask of its pipeline: only embedding tasks write vectors, and
// `dimensions` cannot keep more values than the model's vectors have. The task is judged with the
// fields; the size needs the model folder's config.json, read once the config file's paths are
// resolved (loadConfigFile), so that `run` and `validate-config` refuse the same.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { findTask, VECTOR_TASK_NAMES, writesVectors } from '../pipelines/registry.ts';
import type { WorkerConfig } from './schema.ts';

export interface VectorProblem {
  field: string;
  line: string;
}

/** `output.vectors` on a route whose pipeline does not write vectors. */
export function vectorTaskProblems(config: WorkerConfig): VectorProblem[] {
  const problems: VectorProblem[] = [];
  config.routes.forEach((route, i) => {
    const pipeline = config.pipelines[route.pipeline];
    if (route.output.vectors === undefined || pipeline === undefined) return;
    if (writesVectors(pipeline.task)) return;
    const field = `routes.${i}.output.vectors`;
    problems.push({
      field,
      line: `${field}: pipeline '${route.pipeline}' (${pipeline.task}) does not write vectors; output.vectors is for ${VECTOR_TASK_NAMES.join(', ')}; remove it`,
    });
  });
  return problems;
}

/**
 * `output.vectors.dimensions` over the length of the model's vectors, by its config.json. A
 * folder whose config cannot be read, or does not say (or a pipeline reading an output by name),
 * is left to the route, which dead-letters a record whose vector is shorter (VECTOR_TOO_SHORT).
 */
export async function vectorSizeProblems(config: WorkerConfig): Promise<VectorProblem[]> {
  const problems: VectorProblem[] = [];
  for (const [i, route] of config.routes.entries()) {
    const dimensions = route.output.vectors?.dimensions;
    const pipeline = config.pipelines[route.pipeline];
    const model = pipeline === undefined ? undefined : config.models[pipeline.model];
    const sizeOf = pipeline === undefined ? undefined : findTask(pipeline.task)?.vectorSize;
    // A Hub model not yet pulled has no folder to read: the route checks its vectors instead.
    if (dimensions === undefined || model?.path === undefined || sizeOf === undefined) continue;
    const modelConfig = await readConfigJson(model.path);
    const size =
      modelConfig === undefined ? undefined : sizeOf(modelConfig, pipeline?.options ?? {});
    if (size === undefined || dimensions <= size) continue;
    const field = `routes.${i}.output.vectors.dimensions`;
    problems.push({
      field,
      line: `${field}: ${dimensions} is more than the ${size} values of model '${pipeline?.model}' (${model.path}/config.json); use ${size} or fewer, or remove dimensions to keep them all`,
    });
  }
  return problems;
}

async function readConfigJson(folder: string): Promise<Record<string, unknown> | undefined> {
  try {
    const parsed = JSON.parse(await readFile(join(folder, 'config.json'), 'utf8')) as unknown;
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    // The model store reports an unreadable folder when it loads it, with its own fix.
    return undefined;
  }
}
