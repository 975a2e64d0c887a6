import { describe } from 'vitest';
import {
  TokenClassificationPipeline,
  type AggregationStrategy,
  type Entity,
} from '../../src/pipelines/text/token-classification.ts';
import { readGoldens } from './goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-token-classification';
const load = useModelStore();

/** Python names the grouped label `entity_group`; ours is camelCase like every other field. */
function asPython(entities: Entity[]): unknown[] {
  return entities.map((e) => {
    if (!('entityGroup' in e)) return e;
    const { entityGroup, ...rest } = e;
    return { entity_group: entityGroup, ...rest };
  });
}

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
      return unbatch(call.inputs, outputs.map(asPython));
    });
  }
});
