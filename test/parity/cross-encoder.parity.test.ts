import { describe } from 'vitest';
import {
  CrossEncoderPipeline,
  type RankedDocument,
} from '../../src/pipelines/text/cross-encoder.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, forPipeline, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-cross-encoder';
const load = useModelStore();

interface Pair {
  text: string;
  text_pair: string;
}

/**
 * The goldens are Python's text-classification pipeline over (query, document) pairs that all
 * share one query. Our call is that query with its documents; the expected ranking is Python's
 * scores, best first, each with its document's original position.
 */
function ranked(golden: GoldenCase): RankedDocument[] {
  const pairs = asBatch(golden.call.inputs) as Pair[];
  const scores = asBatch(golden.output) as { score: number }[];
  return pairs
    .map((pair, index) => ({ index, document: pair.text_pair, score: scores[index]?.score ?? NaN }))
    .sort((a, b) => b.score - a.score);
}

describe('crossEncoder', forPipeline('crossEncoder'), () => {
  for (const golden of readGoldens(MODEL).pipeline) {
    parityCase(
      golden,
      async ({ call }) => {
        const pairs = asBatch(call.inputs) as Pair[];
        const query = pairs[0]?.text ?? '';
        if (pairs.some((p) => p.text !== query)) throw new Error('golden pairs must share a query');
        const { function_to_apply: functionToApply } = call.options as {
          function_to_apply?: 'sigmoid' | 'none';
        };
        const pipeline = new CrossEncoderPipeline(await load(MODEL), {
          ...(functionToApply !== undefined ? { functionToApply } : {}),
        });
        const [result] = await pipeline.run([{ query, documents: pairs.map((p) => p.text_pair) }]);
        return result;
      },
      { expected: ranked },
    );
  }
});
