// scikit-learn's own predict / predict_proba on held-out rows (scripts/models/kit/tabular.py) against
// the tabular pipeline on the skl2onnx export: probabilities and values within 1e-4, labels equal.
import { describe, expect, it } from 'vitest';
import { TabularPipeline, type TabularRow } from '../../src/pipelines/tabular/tabular.ts';
import { compareDeep } from './compare.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODELS = [
  'sklearn-decision-tree-iris',
  'sklearn-random-forest-breast-cancer',
  'sklearn-gradient-boosting-wine',
  'sklearn-logistic-regression-breast-cancer',
  'sklearn-random-forest-regressor-diabetes',
];
const load = useModelStore();

async function pipelineFor(model: string, golden: GoldenCase): Promise<TabularPipeline> {
  const { top_k: topK } = golden.call.options as { top_k?: number };
  return new TabularPipeline(await load(model), topK === undefined ? {} : { topK });
}

describe('tabular', forPipeline('tabular'), () => {
  for (const model of MODELS) {
    const goldens = readGoldens(model);
    const batch = goldens.pipeline.find((g) => g.name === 'held_out_batch');
    if (batch === undefined) throw new Error(`${model}: goldens have no held_out_batch case`);
    const rows = batch.call.inputs as number[][];
    const expected = batch.output as unknown[];

    describe(model, () => {
      for (const golden of goldens.pipeline) {
        parityCase(golden, async (g) => {
          const pipeline = await pipelineFor(model, g);
          return unbatch(g.call.inputs, await pipeline.run(asBatch(g.call.inputs) as TabularRow[]));
        });
      }

      // Batch independence: each held-out row alone, and the batch reversed, give Python's
      // answer for that row.
      parityCase(
        { ...batch, name: 'held_out_rows_one_at_a_time' },
        async (g) => {
          const pipeline = await pipelineFor(model, g);
          const results = [];
          for (const row of rows) results.push(...(await pipeline.run([row])));
          return results;
        },
        { rerun: true },
      );
      parityCase(
        { ...batch, name: 'held_out_batch_reversed' },
        async (g) => {
          const pipeline = await pipelineFor(model, g);
          return (await pipeline.run([...rows].reverse())).reverse();
        },
        { rerun: true },
      );

      it('runs a batch in one session.run, the same as its rows one by one', async () => {
        const pipeline = await pipelineFor(model, batch);
        const together = await pipeline.run(rows);
        expect(pipeline.statistics.inference.calls).toBe(1);
        const alone = [];
        for (const row of rows.slice(0, 10)) alone.push(...(await pipeline.run([row])));
        // No batch-wide statistic enters a tree or a dot product. Trees are bit-exact; a linear
        // model's matrix product takes another kernel for one row than for many, which can move
        // the last float32 bit (3e-8 measured), so the bar is 1e-6 and labels must be equal.
        const comparison = compareDeep(alone, together.slice(0, 10), 1e-6);
        expect(comparison.differences).toEqual([]);
        expect(together).toHaveLength(expected.length);
      });
    });
  }
});
