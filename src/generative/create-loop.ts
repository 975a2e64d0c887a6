// Which step loop a generation thread runs: the one its task's definition names (execution in
// task-definition.ts). The pipeline must also drive that loop's interface (stepwise.ts for a
// cohort, segmentwise.ts for segments), which a task that is not generative fails.
import { ConfigError } from '../errors.ts';
import { TextGenerationPipeline } from '../pipelines/generation/text-generation.ts';
import type { LoadedModel } from '../pipelines/runtime/model-store.ts';
import { isSegmentwiseGenerator } from '../pipelines/generation/segmentwise.ts';
import { isStepwiseGenerator } from '../pipelines/generation/stepwise.ts';
import { GenerationLoop } from './generation-loop.ts';
import type { GenerationWorkerSetup } from './protocol.ts';
import { loadTask } from '../pipelines/task-modules.ts';
import { CohortLoop } from './cohort-loop.ts';
import { SegmentLoop } from './segment-loop.ts';
import type { StepLoop } from './step-loop.ts';

export async function createLoop(
  model: LoadedModel,
  setup: GenerationWorkerSetup,
): Promise<StepLoop> {
  // Only this task's module: the thread holds no other task's code.
  const definition = await loadTask(setup.task);
  if (definition.execution === 'decoderOnly') {
    const pipeline = new TextGenerationPipeline(model, setup.generation, {
      prefixCache: setup.prefixCache,
    });
    // A generation_config.json it cannot honour fails the engine's start, not each request.
    await pipeline.ready();
    return new GenerationLoop(pipeline, setup.limits);
  }
  const pipeline =
    definition.execution === 'batch' ? undefined : definition.create(model, setup.pipelineOptions);
  const maxActive = setup.limits.maxActive;
  if (definition.execution === 'segment' && isSegmentwiseGenerator(pipeline))
    return SegmentLoop.create(pipeline, { maxActive });
  if (definition.execution === 'cohort' && isStepwiseGenerator(pipeline))
    return CohortLoop.create(pipeline, { maxActive });
  // The whole registry only for the message, on a path that ends the engine's start.
  const { GENERATIVE_TASK_NAMES } = await import('../pipelines/registry.ts');
  throw new ConfigError(
    `the generative engine runs ${GENERATIVE_TASK_NAMES.join(', ')}; not ${setup.task}`,
    { field: 'task' },
  );
}
