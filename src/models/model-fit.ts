// One model checked against one task where it loads (the library's registerPipeline, a
// generation thread), so a caller that skips the worker's start-up check still gets the
// ConfigError instead of a pipeline that writes nonsense.
import { ConfigError } from '../errors.ts';
import { readModelFacts } from './model-facts.ts';
import type { OnnxChoice } from './onnx-layout.ts';
import { misfitMessage, misfits, type ModelNeeds } from './task-fit.ts';

export async function checkModelFits(
  model: string,
  task: string,
  needs: ModelNeeds,
  folder: string,
  choice: OnnxChoice = {},
): Promise<void> {
  const missing = misfits(needs, await readModelFacts(folder, choice));
  if (missing.length > 0)
    throw new ConfigError(misfitMessage(model, task, missing), { field: `models.${model}` });
}
