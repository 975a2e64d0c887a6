import { describe } from 'vitest';
import {
  TokenClassificationPipeline,
  type AggregationStrategy,
} from '../../src/pipelines/text/token-classification.ts';
import { readGoldens } from './goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'bert-token-classification';
const load = useModelStore();

describe('tokenClassification', forPipeline('tokenClassification'), () => {
  for (const golden of readGoldens(MODEL).pipeline) {
    parityCase(golden, async ({ call }) => {
      const { aggregation_strategy: aggregationStrategy, ignore_labels: ignoreLabels } =
        call.options as { aggregation_strategy?: AggregationStrategy; ignore_labels?: string[] };
      const pipeline = new TokenClassificationPipeline(await load(MODEL), {
        ...(aggregationStrategy !== undefined ? { aggregationStrategy } : {}),
        ...(ignoreLabels !== undefined ? { ignoreLabels } : {}),
      });
      const outputs = await pipeline.run(asBatch(call.inputs) as string[]);
      return unbatch(
        call.inputs,
        outputs.map((o) => asPython('tokenClassification', o)),
      );
    });
  }
});
