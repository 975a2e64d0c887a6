// The shared-prefix KV cache on a real LM, SmolLM2-135M-Instruct: Python's greedy goldens again
// with every prompt starting from cached blocks (the chats share the template's system turn, and
// each prompt runs twice), and an enrichment-style instruction with different records, cached
// against uncached, on the single-request path and interleaved in the engine's step loop. Skipped,
// and reported as skipped, without the model (`npm run models:ensure`), as the SmolLM2 parity test
// is (and failed in CI: fetched-models.ts); the goldens are committed (real-weight-references.ts).
// Last, the step loop with a resident cache (runtime.kvOn: device, here in CPU memory): the prefix
// cache's blocks are then values on the device, cut and joined there, rows move onto and off a
// shared prefix there, and the tokens must be the host path's.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { GenerationLoop } from '../../src/generative/generation-loop.ts';
import { compileSchedulerOptions } from '../../src/generative/scheduler.ts';
import type { GenerationResult } from '../../src/pipelines/generation/generation-progress.ts';
import {
  ModelStore,
  type LoadedModel,
  type ModelSpec,
} from '../../src/pipelines/runtime/model-store.ts';
import {
  TextGenerationPipeline,
  type ChatMessage,
} from '../../src/pipelines/generation/text-generation.ts';
import { residentStats } from '../../src/runtime/native/resident-value.ts';
import { forPipeline, RERUN } from './parity-case.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { readSmolGoldens } from './real-weight-references.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '.cache', 'models', 'smollm2-135m-instruct');
const fetched = existsSync(join(FOLDER, 'model.onnx'));

const INSTRUCTION =
  'You triage e-mails for a support team. For the e-mail in the user turn, answer in one line: ' +
  'first the category (billing, bug report, account, sales, spam or other), then the urgency ' +
  '(low, normal or high), then at most ten words saying what the sender wants. Do not greet, do ' +
  'not apologise, do not repeat the e-mail, and never invent facts that are not in it. If the ' +
  'e-mail is empty or unreadable, answer "other, low, unreadable".';
const RECORDS = [
  'Hi, I was charged twice for my March invoice. Please refund one of the payments.',
  'The export button crashes the app every time since the last update. We need this fixed today, our audit is tomorrow!',
  'Can I change the e-mail address on my account?',
  'WIN A FREE CRUISE!!! Click here now to claim your prize before midnight.',
];
const ENRICH = { systemPrompt: INSTRUCTION, maxNewTokens: 16 };
const chat = (record: string): ChatMessage[] => [{ role: 'user', content: record }];

/** The records through a step loop whose prompts prefill in 48-token chunks while others decode. */
async function enrichInLoop(loop: GenerationLoop): Promise<Map<number, GenerationResult>> {
  const results = new Map<number, GenerationResult>();
  for (const [id, record] of RECORDS.entries())
    await loop.submit({ id, input: chat(record), options: ENRICH });
  for (let step = 0; !loop.idle; step += 1) {
    for (const event of await loop.step()) {
      if (event.kind === 'done') results.set(event.id, event.result);
      if (event.kind === 'failed') throw new Error(event.error.message);
    }
    if (step > 1000) throw new Error('the loop did not finish');
  }
  return results;
}
const LOOP_LIMITS = { maxActive: 4, stepTokens: 48, maxKvTokens: 2000 };

describe('smollm2-135m-instruct prefix cache (fetched)', forPipeline('textGeneration'), () => {
  const store = new ModelStore();
  afterAll(() => store.close());
  let model: Promise<LoadedModel> | undefined;
  const load = (): Promise<LoadedModel> => (model ??= store.load({ path: FOLDER }));

  whenFetched(fetched)(
    'Python’s greedy goldens, every prompt twice, starting from cached blocks (needs npm run models:ensure)',
    RERUN,
    async () => {
      if (!fetched) throw missingWeights('smollm2-135m-instruct');
      const goldens = readSmolGoldens();
      // The defaults (16-token blocks, prompts of 32 tokens or more).
      const gen = new TextGenerationPipeline(await load(), {}, { prefixCache: {} });
      for (const golden of [...goldens, ...goldens]) {
        const result = await gen.generate(golden.call.prompt, {
          maxNewTokens: golden.call.options.max_new_tokens,
        });
        expect(result.tokenIds, golden.name).toEqual(golden.new_ids);
      }
      const stats = gen.prefixCache?.stats();
      const long = goldens.filter((g) => typeof g.call.prompt !== 'string').length;
      // Every chat's second run hits, and the first runs of chats after the first one share the
      // template's system turn.
      expect(stats?.hits).toBeGreaterThanOrEqual(long + 1);
    },
  );

  whenFetched(fetched)(
    'one instruction, different records: cached output equals uncached, alone and interleaved',
    async () => {
      if (!fetched) throw missingWeights('smollm2-135m-instruct');
      const loaded = await load();
      const plain = new TextGenerationPipeline(loaded);
      const gen = new TextGenerationPipeline(loaded, {}, { prefixCache: {} });
      const expected: number[][] = [];
      for (const record of RECORDS)
        expected.push((await plain.generate(chat(record), ENRICH)).tokenIds);
      for (const [i, record] of RECORDS.entries())
        expect((await gen.generate(chat(record), ENRICH)).tokenIds, record).toEqual(expected[i]);
      const instruction = (await gen.promptIds({ kind: 'chat', messages: chat('x') }, INSTRUCTION))
        .length;
      const stats = gen.prefixCache?.stats();
      expect(stats?.hits).toBe(RECORDS.length - 1);
      expect(stats?.tokensSaved).toBeGreaterThanOrEqual(
        (RECORDS.length - 1) * (Math.floor(instruction / 16) - 1) * 16,
      );

      // The step loop, prompts prefilling in 48-token chunks while others decode.
      const looped = new TextGenerationPipeline(loaded, {}, { prefixCache: {} });
      const results = await enrichInLoop(
        new GenerationLoop(looped, compileSchedulerOptions(LOOP_LIMITS)),
      );
      RECORDS.forEach((record, i) => expect(results.get(i)?.tokenIds, record).toEqual(expected[i]));
      expect(looped.prefixCache?.stats().hits).toBe(RECORDS.length - 1);
    },
  );

  // The third keeps room for 8 blocks: records' blocks and the template's shared prefix are
  // evicted while rows still decode on it (the loop frees such a prefix once none does).
  for (const [sharedInput, roomInBlocks] of [
    [false, 0],
    [true, 0],
    [true, 8],
  ] as const)
    whenFetched(fetched)(
      `a resident cache keeps its blocks on the device, with the host path's tokens (sharedInput ${sharedInput}, room for ${roomInBlocks || 'all'} blocks)`,
      async () => {
        if (!fetched) throw missingWeights('smollm2-135m-instruct');
        const spec = (kvOn: 'host' | 'device'): ModelSpec => ({ path: FOLDER, runtime: { kvOn } });
        const { layout } = new TextGenerationPipeline(await store.load(spec('host')));
        // 16-token float32 blocks of every cache tensor.
        const blockBytes = layout.pastNames.length * layout.kvHeads * 16 * layout.headDim * 4;
        const prefixCache = {
          sharedInput,
          ...(roomInBlocks > 0 ? { maxBytes: roomInBlocks * blockBytes } : {}),
        };
        const run = async (
          kvOn: 'host' | 'device',
        ): Promise<{ gen: TextGenerationPipeline; loop: GenerationLoop; tokens: number[][] }> => {
          const gen = new TextGenerationPipeline(await store.load(spec(kvOn)), {}, { prefixCache });
          const loop = new GenerationLoop(gen, compileSchedulerOptions(LOOP_LIMITS));
          const results = await enrichInLoop(loop);
          return { gen, loop, tokens: RECORDS.map((_, i) => results.get(i)?.tokenIds ?? []) };
        };
        const host = await run('host');
        // Loaded before counting: the model's own load makes no resident values, but be exact.
        const device = await store.load(spec('device'));
        const before = residentStats();
        const { gen, loop, tokens } = await run('device');
        tokens.forEach((ids, i) => expect(ids, RECORDS[i]).toEqual(host.tokens[i]));
        expect(host.tokens.every((ids) => ids.length > 0)).toBe(true);
        const stats = gen.prefixCache?.stats();
        expect(stats?.hits).toBe(RECORDS.length - 1);
        expect(stats?.tokensSaved).toBeGreaterThan(0);
        expect(stats).toEqual(host.gen.prefixCache?.stats());
        if (roomInBlocks > 0) expect(stats?.evictions).toBeGreaterThan(0);
        if (device.session.runResident === undefined) {
          // onnxruntime-node (the second parity project): no resident runs, the host path.
          expect(process.env['HUGOT_ORT_BINDING']).toBe('onnxruntime-node');
          return;
        }
        // Idle, the loop holds nothing but the cache: every block is one resident value per
        // cache tensor (a kept shared prefix is one more per tensor).
        const idle = residentStats();
        const perBlock = gen.layout.pastNames.length;
        const blocks = (stats?.blocks ?? 0) * perBlock;
        expect(blocks).toBeGreaterThan(0);
        if (sharedInput) expect(idle.live - before.live).toBeGreaterThanOrEqual(blocks);
        else expect(idle.live - before.live).toBe(blocks);
        // Neither a store nor a hit copied a cache to the host, nor did rows moving onto a shared
        // prefix or taking it back (ResidentRows, with sharedInput).
        expect(idle.hostCopies - before.hostCopies).toBe(0);
        await loop.close();
        expect(residentStats().live).toBe(before.live);
        expect(gen.prefixCache?.stats()).toMatchObject({ blocks: 0, bytes: 0 });
      },
    );
});
