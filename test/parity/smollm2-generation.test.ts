// SmolLM2-135M-Instruct, a real small LM: our greedy generation must give the very tokens that
// Python's text-generation pipeline gave on the same (dequantized float32) weights. The model is
// built by `npm run models:fetch` into .cache/models (scripts/models/kit/smollm2.py); without it
// the tests are skipped, and reported as skipped, as the other fetched-model tests are, except in
// CI, where they fail (fetched-models.ts).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import {
  TextGenerationPipeline,
  type ChatMessage,
} from '../../src/pipelines/generation/text-generation.ts';
import { forPipeline, GOLDEN } from './parity-case.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '.cache', 'models', 'smollm2-135m-instruct');
const fetched = existsSync(join(FOLDER, 'goldens.json'));

interface SmolGoldens {
  generation: {
    name: string;
    call: { prompt: string | ChatMessage[]; options: { max_new_tokens: number } };
    prompt_ids: number[];
    new_ids: number[];
    text: string;
    stopped_by_eos: boolean;
  }[];
}

type Golden = SmolGoldens['generation'][number];

// Without the model there are no goldens to name the tests after: one test stands for them all and
// is skipped, as the other fetched-model tests are.
const cases: (Golden | undefined)[] = fetched
  ? (JSON.parse(readFileSync(join(FOLDER, 'goldens.json'), 'utf8')) as SmolGoldens).generation
  : [undefined];

describe('smollm2-135m-instruct (fetched)', forPipeline('textGeneration'), () => {
  describe('greedy output equals the Python pipeline token for token', GOLDEN, () => {
    const store = new ModelStore();
    afterAll(() => store.close());
    let pipeline: Promise<TextGenerationPipeline> | undefined;
    // One load of the 650 MB model for every case in the file.
    const load = (): Promise<TextGenerationPipeline> =>
      (pipeline ??= store.load({ path: FOLDER }).then((m) => new TextGenerationPipeline(m)));

    for (const golden of cases) {
      whenFetched(golden !== undefined)(
        `${golden?.name ?? 'every golden'} (needs npm run models:fetch)`,
        async () => {
          if (golden === undefined) throw missingWeights('smollm2-135m-instruct');
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
        },
      );
    }
  });
});
