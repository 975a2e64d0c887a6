import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/errors.ts';
import { ZeroShotClassificationPipeline } from '../../src/pipelines/text/zero-shot-classification.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-zero-shot';
const load = useModelStore();

async function pipelineFor({ call }: GoldenCase): Promise<ZeroShotClassificationPipeline> {
  const options = call.options as {
    candidate_labels: string[];
    hypothesis_template?: string;
    multi_label?: boolean;
  };
  return new ZeroShotClassificationPipeline(await load(MODEL), {
    candidateLabels: options.candidate_labels,
    ...(options.hypothesis_template !== undefined
      ? { hypothesisTemplate: options.hypothesis_template }
      : {}),
    ...(options.multi_label !== undefined ? { multiLabel: options.multi_label } : {}),
  });
}

describe('zeroShotClassification', forPipeline('zeroShotClassification'), () => {
  for (const golden of readGoldens(MODEL).pipeline) {
    const error = (golden as GoldenCase & { error?: { type: string; message: string } }).error;
    if (error !== undefined) {
      // Python raised (ValueError for an empty sequence); we refuse the same input as bad input.
      it(`${golden.name} (${golden.task}): rejected as Python rejects it`, GOLDEN, async () => {
        const pipeline = await pipelineFor(golden);
        await expect(pipeline.run(asBatch(golden.call.inputs) as string[])).rejects.toThrow(
          InputError,
        );
      });
      continue;
    }
    parityCase(golden, async (g) => {
      const pipeline = await pipelineFor(g);
      return unbatch(g.call.inputs, await pipeline.run(asBatch(g.call.inputs) as string[]));
    });
  }
});
