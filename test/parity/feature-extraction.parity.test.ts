import { describe } from 'vitest';
import { FeatureExtractionPipeline } from '../../src/pipelines/text/feature-extraction.ts';
import { TextTokenizer } from '../../src/pipelines/runtime/text-tokenizer.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'bert-feature-extraction';

type TokenStates = number[][][];

// Counted by the tokenizer (itself checked against Python's in tokenization.parity.test.ts), never
// by the pipeline under test: the expected rows must not follow our output's length.
const tokenizer = await TextTokenizer.load(modelPath(MODEL));
const batchLengths = new Map<string, number[]>();
for (const golden of readGoldens(MODEL).pipeline) {
  if (golden.task !== 'feature-extraction' || !Array.isArray(golden.call.inputs)) continue;
  const encoded = await tokenizer.encode(golden.call.inputs as string[]);
  const lengths = encoded.map((e) => e.ids.length);
  // Python pads to the longest input: its width must be the longest count, or the counts are off.
  const width = (golden.output as TokenStates[])[0]?.[0]?.length;
  if (width !== Math.max(...lengths))
    throw new Error(`${golden.name}: Python's padded width ${width} is not the longest input`);
  batchLengths.set(golden.name, lengths);
}

/**
 * Python's feature-extraction pipeline with batch_size > 1 returns the hidden states of the
 * padding positions too, so a short input's output depends on its batch mates. We return only
 * the input's own tokens: the expected rows are Python's first N rows, N the input's token count.
 */
function withoutPadding(golden: GoldenCase): unknown {
  const lengths = batchLengths.get(golden.name);
  if (lengths === undefined) return golden.output;
  return (golden.output as TokenStates[]).map((states, i) => [states[0]?.slice(0, lengths[i])]);
}
const load = useModelStore();

describe('featureExtraction', forPipeline('featureExtraction'), () => {
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
        // Pooled vectors are sentence-transformers' shape, token vectors the pipeline's.
        return unbatch(
          call.inputs,
          outputs.map((o) => asPython('featureExtraction', o)),
        );
      },
      { expected: withoutPadding },
    );
  }
});
