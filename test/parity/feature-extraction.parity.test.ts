import { describe } from 'vitest';
import { FeatureExtractionPipeline } from '../../src/pipelines/feature-extraction.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-feature-extraction';

type TokenStates = number[][][];

/**
 * Python's feature-extraction pipeline with batch_size > 1 returns the hidden states of the
 * padding positions too, so a short input's output depends on its batch mates. We return only
 * the input's own tokens; the rows compared are those, and the extra rows must be all there is.
 */
function withoutPadding(golden: GoldenCase, actual: unknown): unknown {
  if (!Array.isArray(golden.call.inputs) || golden.task !== 'feature-extraction')
    return golden.output;
  const ours = actual as TokenStates[];
  return (golden.output as TokenStates[]).map((states, i) => [
    states[0]?.slice(0, ours[i]?.[0]?.length),
  ]);
}
const load = useModelStore();

describe('featureExtraction', () => {
  for (const golden of readGoldens(MODEL).pipeline) {
    parityCase(
      golden,
      async ({ task, call }) => {
        const model = await load(MODEL);
        const options = call.options;
        // Python's feature-extraction pipeline returns every token's hidden state with a leading
        // batch dimension of 1; the golden 'sentence-embedding' cases pool as sentence-transformers.
        const pipeline =
          task === 'feature-extraction'
            ? new FeatureExtractionPipeline(model, { pooling: 'none' })
            : new FeatureExtractionPipeline(model, {
                pooling: 'mean',
                normalize: options['normalize'] === true,
              });
        const outputs = await pipeline.run(asBatch(call.inputs) as string[]);
        if (task === 'sentence-embedding') return outputs;
        return unbatch(
          call.inputs,
          outputs.map((tokens) => [tokens]),
        );
      },
      { expected: withoutPadding },
    );
  }
});
