// Which step loop a generation thread runs: the decoder-only loop for textGeneration, the
// encoder–decoder one for a task whose pipeline can decode step by step (stepwise-seq2seq.ts).
import { ConfigError } from '../errors.ts';
import { TextGenerationPipeline } from '../pipelines/generation/text-generation.ts';
import { findTask } from '../pipelines/registry.ts';
import type { LoadedModel } from '../pipelines/runtime/model-store.ts';
import { isStepwiseSeq2Seq } from '../pipelines/seq2seq/stepwise-seq2seq.ts';
import { GenerationLoop } from './generation-loop.ts';
import { GENERATIVE_TASKS } from './generative-tasks.ts';
import type { GenerationWorkerSetup } from './protocol.ts';
import { Seq2SeqLoop } from './seq2seq-loop.ts';
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
  if (!isStepwiseSeq2Seq(pipeline)) {
    throw new ConfigError(
      `the generative engine runs ${GENERATIVE_TASKS.join(', ')}; not ${setup.task}`,
      { field: 'task' },
    );
  }
  return Seq2SeqLoop.create(pipeline, { maxActive: setup.limits.maxActive });
}
