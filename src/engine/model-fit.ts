// Every pipeline's model checked against its task before anything loads: the folder exists and
// holds the graphs its spec chooses, and it declares what the task needs (src/models/task-fit.ts).
// The worker runs this at start-up, before it waits for brokers, and validate-config runs it
// alone: it reads config.json and a few kilobytes of each graph, never a weight. The library's
// callers are checked where Hugot loads a pipeline (src/models/model-fit.ts); a shard's threads,
// whose engine ran this, are not.
import { ConfigError, HugotError } from '../errors.ts';
import { readModelFacts } from '../models/model-facts.ts';
import { misfitMessage, misfits, type ModelFacts } from '../models/task-fit.ts';
import { findTask } from '../pipelines/registry.ts';
import type { OnnxVariant } from '../models/onnx-layout.ts';

/** What the check reads of a model's spec (ModelSpec, or the config's models entry). */
interface ModelPlace {
  path: string;
  onnxFile?: string | undefined;
  variant?: OnnxVariant | undefined;
}

export interface FitProblem {
  /** The config field: models.<name> for a folder that cannot be read, pipelines.<name> for a misfit. */
  field: string;
  line: string;
}

/** Each problem once; an empty list when every pipeline's model fits its task. */
export async function modelFitProblems(
  models: Record<string, ModelPlace>,
  pipelines: Record<string, { task: string; model: string }>,
): Promise<FitProblem[]> {
  const facts = new Map<string, Promise<ModelFacts | FitProblem>>();
  const factsOf = (alias: string, spec: ModelPlace): Promise<ModelFacts | FitProblem> => {
    let found = facts.get(alias);
    if (found === undefined) {
      found = readModelFacts(spec.path, { onnxFile: spec.onnxFile, variant: spec.variant }).catch(
        (err: unknown) => {
          if (!(err instanceof HugotError)) throw err;
          const field = `models.${alias}${err.field === 'onnxFile' || err.field === 'variant' ? `.${err.field}` : ''}`;
          return { field, line: `${field}: model '${alias}': ${err.message}` };
        },
      );
      facts.set(alias, found);
    }
    return found;
  };
  const problems: FitProblem[] = [];
  const seen = new Set<string>();
  for (const [alias, pipeline] of Object.entries(pipelines)) {
    const spec = models[pipeline.model];
    const definition = findTask(pipeline.task);
    // Unknown names are the config check's to report.
    if (spec === undefined || definition === undefined) continue;
    const model = await factsOf(pipeline.model, spec);
    if ('line' in model) {
      if (!seen.has(model.field)) problems.push(model);
      seen.add(model.field);
      continue;
    }
    const missing = misfits(definition.needs, model);
    if (missing.length > 0) {
      const field = `pipelines.${alias}`;
      problems.push({
        field,
        line: `${field}: ${misfitMessage(pipeline.model, pipeline.task, missing)}`,
      });
    }
  }
  // A model no pipeline uses is still a folder the config promises.
  for (const [alias, spec] of Object.entries(models)) {
    const model = await factsOf(alias, spec);
    if ('line' in model && !seen.has(model.field)) problems.push(model);
    if ('line' in model) seen.add(model.field);
  }
  return problems;
}

/** A ConfigError naming every model that is missing or does not fit its pipelines' tasks. */
export async function checkModelFit(
  models: Record<string, ModelPlace>,
  pipelines: Record<string, { task: string; model: string }>,
): Promise<void> {
  const problems = await modelFitProblems(models, pipelines);
  if (problems.length === 0) return;
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  throw new ConfigError(
    `the models do not serve their pipelines (${count}):\n  ${problems.map((p) => p.line).join('\n  ')}`,
    { field: problems[0]?.field ?? 'models' },
  );
}
