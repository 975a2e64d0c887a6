// SmolLM2's appending export (model_appending.onnx, scripts/models/kit/graph_llama.py
// build(appending=True)): the same weights and arithmetic as model.onnx, but each step returns its
// own keys and values, which the cache writes into buffers with spare columns instead of taking a
// new copy of the whole cache from the model. Its greedy tokens must be Python's, token for token,
// alone (the pipeline) and continuously batched (the engine's step loop, rows joining, leaving and
// outgrowing their buffers), on both bindings. `npm run models:ensure` builds it without torch.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { GenerationLoop, type SubmitRequest } from '../../src/generative/generation-loop.ts';
import type { SequenceEvent } from '../../src/generative/protocol.ts';
import { compileSchedulerOptions } from '../../src/generative/scheduler.ts';
import { APPEND_COLUMNS } from '../../src/pipelines/generation/kv-cache.ts';
import { TextGenerationPipeline } from '../../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { forPipeline, GOLDEN } from './parity-case.ts';
import { readSmolGoldens } from './real-weight-references.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '.cache', 'models', 'smollm2-135m-instruct');
const ONNX_FILE = 'model_appending.onnx';
const present = existsSync(join(FOLDER, ONNX_FILE));

describe('smollm2-135m-instruct appending export (fetched)', forPipeline('textGeneration'), () => {
  const store = new ModelStore();
  afterAll(() => store.close());
  let pipeline: Promise<TextGenerationPipeline> | undefined;
  const load = (): Promise<TextGenerationPipeline> =>
    (pipeline ??= store
      .load({ path: FOLDER, onnxFile: ONNX_FILE })
      .then((m) => new TextGenerationPipeline(m)));
  const goldens = readSmolGoldens();

  /**
   * Every golden `rounds` times through one step loop, one arriving per step, prompts prefilled in
   * chunks of 24 tokens (so rows join a batch already decoding); each result must be Python's.
   */
  async function expectGoldens(gen: TextGenerationPipeline, rounds: number): Promise<void> {
    const loop = new GenerationLoop(gen, compileSchedulerOptions({ maxActive: 8, stepTokens: 24 }));
    const requests = Array.from({ length: rounds }, () => goldens).flat();
    const events: SequenceEvent[] = [];
    for (let step = 0; step < requests.length || !loop.idle; step += 1) {
      const golden = requests[step];
      if (golden !== undefined) {
        const request: SubmitRequest = {
          id: step,
          input: golden.call.prompt,
          options: { maxNewTokens: golden.call.options.max_new_tokens },
        };
        const failed = await loop.submit(request);
        if (failed !== undefined) events.push(failed);
      }
      events.push(...(await loop.step()));
      expect(step).toBeLessThan(4000);
    }
    expect(events.filter((e) => e.kind === 'failed')).toEqual([]);
    const done = new Map(
      events.flatMap((e) => (e.kind === 'done' ? [[e.id, e.result] as const] : [])),
    );
    requests.forEach((golden, id) => {
      expect(done.get(id)?.tokenIds, `${golden.name} (request ${id})`).toEqual(golden.new_ids);
    });
  }

  describe('greedy output equals the Python pipeline token for token', GOLDEN, () => {
    whenFetched(present)(`alone, every golden (built by npm run models:ensure)`, async () => {
      if (!present) throw missingWeights(`smollm2-135m-instruct/${ONNX_FILE}`);
      const gen = await load();
      expect(gen.layout.appending).toBe(true);
      expect(goldens.length).toBeGreaterThan(0);
      for (const golden of goldens) {
        const result = await gen.generate(golden.call.prompt, {
          maxNewTokens: golden.call.options.max_new_tokens,
        });
        expect(result.tokenIds, golden.name).toEqual(golden.new_ids);
        expect(result.text, golden.name).toBe(golden.text);
      }
    });

    whenFetched(present)(
      'continuously batched: arriving at different steps, prefilled in chunks, leaving apart',
      async () => {
        if (!present) throw missingWeights(`smollm2-135m-instruct/${ONNX_FILE}`);
        const longest = Math.max(...goldens.map((g) => g.call.options.max_new_tokens));
        // Rows must outgrow their first buffers for the test to reach the copy into wider ones.
        expect(longest + Math.max(...goldens.map((g) => g.prompt_ids.length))).toBeGreaterThan(
          APPEND_COLUMNS,
        );
        await expectGoldens(await load(), 1);
      },
    );

    whenFetched(present)(
      'continuously batched from the prefix cache: every prompt twice, the second time a hit',
      async () => {
        if (!present) throw missingWeights(`smollm2-135m-instruct/${ONNX_FILE}`);
        const model = await store.load({ path: FOLDER, onnxFile: ONNX_FILE });
        // Small blocks, so that every golden's prompt has cached blocks the second time round.
        const cached = new TextGenerationPipeline(
          model,
          {},
          { prefixCache: { blockTokens: 4, minTokens: 4 } },
        );
        await expectGoldens(cached, 2);
        expect(cached.prefixCache?.stats().hits).toBeGreaterThanOrEqual(goldens.length);
      },
    );
  });
});
