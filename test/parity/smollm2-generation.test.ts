// SmolLM2-135M-Instruct, a real small LM: our greedy generation must give the very tokens that
// Python's text-generation pipeline gave on the same (dequantized float32) weights (committed:
// real-weight-references.ts). The model is built by `npm run models:ensure` into .cache/models
// (scripts/models/build_weights.py, without torch; `models:fetch` builds it with torch); without
// it the tests are skipped, and reported as skipped, as the other fetched-model tests are, except
// in CI, where they fail (fetched-models.ts).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import { TextGenerationPipeline } from '../../src/pipelines/generation/text-generation.ts';
import { forPipeline, GOLDEN } from './parity-case.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { readSmolGoldens } from './real-weight-references.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '.cache', 'models', 'smollm2-135m-instruct');
const fetched = existsSync(join(FOLDER, 'model.onnx'));

describe('smollm2-135m-instruct (fetched)', forPipeline('textGeneration'), () => {
  describe('greedy output equals the Python pipeline token for token', GOLDEN, () => {
    const store = new ModelStore();
    afterAll(() => store.close());
    let pipeline: Promise<TextGenerationPipeline> | undefined;
    // One load of the 540 MB model for every case in the file.
    const load = (): Promise<TextGenerationPipeline> =>
      (pipeline ??= store.load({ path: FOLDER }).then((m) => new TextGenerationPipeline(m)));

    // The goldens are committed: every case is named, run or skipped, whether or not the model is.
    for (const golden of readSmolGoldens()) {
      whenFetched(fetched)(`${golden.name} (needs npm run models:ensure)`, async () => {
        if (!fetched) throw missingWeights('smollm2-135m-instruct');
        const gen = await load();
        const prompt = golden.call.prompt;
        const input =
          typeof prompt === 'string'
            ? ({ kind: 'text', text: prompt } as const)
            : ({ kind: 'chat', messages: prompt } as const);
        expect(await gen.promptIds(input, undefined)).toEqual(golden.prompt_ids);
        const result = await gen.generate(prompt, {
          maxNewTokens: golden.call.options.max_new_tokens,
        });
        expect(result.tokenIds).toEqual(golden.new_ids);
        expect(result.text).toBe(golden.text);
        expect(result.finishReason).toBe(golden.stopped_by_eos ? 'eos' : 'length');
      });
    }
  });
});
