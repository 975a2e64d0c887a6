import { describe } from 'vitest';
import { FillMaskPipeline, type FillMaskOptions } from '../../src/pipelines/text/fill-mask.ts';
import { readGoldens } from './goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-fill-mask';
const load = useModelStore();

function toOptions(options: Record<string, unknown>): FillMaskOptions {
  const { top_k: topK, targets } = options as { top_k?: number; targets?: string | string[] };
  return {
    ...(topK !== undefined ? { topK } : {}),
    ...(targets !== undefined ? { targets } : {}),
  };
}

describe('fillMask', forPipeline('fillMask'), () => {
  describe(MODEL, () => {
    const goldens = readGoldens(MODEL).pipeline;
    for (const golden of goldens) {
      parityCase(golden, async ({ call }) => {
        const pipeline = new FillMaskPipeline(await load(MODEL), toOptions(call.options));
        const outputs = await pipeline.run(asBatch(call.inputs) as string[]);
        return unbatch(call.inputs, outputs);
      });
    }

    // Every text again inside one mixed-length batch: each must come out as it does alone.
    for (const golden of goldens) {
      parityCase(
        { ...golden, name: `${golden.name} in a batch` },
        async ({ call }) => {
          const pipeline = new FillMaskPipeline(await load(MODEL), toOptions(call.options));
          const others = goldens.flatMap((g) => asBatch(g.call.inputs) as string[]);
          const own = asBatch(call.inputs) as string[];
          const outputs = await pipeline.run([...others, ...own]);
          return unbatch(call.inputs, outputs.slice(others.length));
        },
        { rerun: true },
      );
    }
  });
});
