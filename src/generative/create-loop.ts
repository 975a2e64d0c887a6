// Which step loop a generation thread runs: the decoder-only loop for textGeneration, the
// cohort loop for a task whose pipeline can decode step by step (stepwise.ts), the segment loop
// for one whose output is final a segment at a time (segmentwise.ts).
import { ConfigError } from '../errors.ts';
import { TextGenerationPipeline } from '../pipelines/generation/text-generation.ts';
import { findTask } from '../pipelines/registry.ts';
import type { LoadedModel } from '../pipelines/runtime/model-store.ts';
import { isSegmentwiseGenerator } from '../pipelines/generation/segmentwise.ts';
import { isStepwiseGenerator } from '../pipelines/generation/stepwise.ts';
import { GenerationLoop } from './generation-loop.ts';
import { GENERATIVE_TASKS } from './generative-tasks.ts';
import type { GenerationWorkerSetup } from './protocol.ts';
import { CohortLoop } from './cohort-loop.ts';
import { SegmentLoop } from './segment-loop.ts';
import type { StepLoop } from './step-loop.ts';

export async function createLoop(
  model: LoadedModel,
  setup: GenerationWorkerSetup,
): Promise<StepLoop> {
  if (setup.task === 'textGeneration') {
    const pipeline = new TextGenerationPipeline(model, setup.generation, {
      prefixCache: setup.prefixCache,
    });
    // A generation_config.json it cannot honour fails the engine's start, not each request.
    await pipeline.ready();
    return new GenerationLoop(pipeline, setup.limits);
  }
  const pipeline = findTask(setup.task)?.create(model, setup.pipelineOptions);
  if (isSegmentwiseGenerator(pipeline))
    return SegmentLoop.create(pipeline, { maxActive: setup.limits.maxActive });
  if (!isStepwiseGenerator(pipeline)) {
    throw new ConfigError(
      `the generative engine runs ${GENERATIVE_TASKS.join(', ')}; not ${setup.task}`,
      { field: 'task' },
    );
  }
  return CohortLoop.create(pipeline, { maxActive: setup.limits.maxActive });
}
