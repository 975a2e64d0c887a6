import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  emptyKvState,
  leftPad,
  runStep,
  hostFeeds,
  stepFeeds,
  type KvState,
  type StepTokens,
} from '../../src/pipelines/generation/kv-cache.ts';
import { argmax } from '../../src/pipelines/generation/sampling.ts';
import {
  TextGenerationPipeline,
  type ChatMessage,
  type GenerationEvent,
} from '../../src/pipelines/generation/text-generation.ts';
import { compareDeep } from './compare.ts';
import { useGenerationConfigCopies } from './generation-config-copy.ts';
import { readGoldens } from './goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'llama-causal-lm';
const load = useModelStore();
const loadWith = useGenerationConfigCopies(load);

interface Goldens {
  tokenization: {
    name: string;
    call: { messages?: ChatMessage[] };
    output: { text?: string; input_ids_without_special_tokens?: number[] };
  }[];
  generation: {
    name: string;
    call: { prompt: string | string[]; options: { max_new_tokens: number } };
    prompt_ids: number[] | number[][];
    attention_mask?: number[][];
    new_ids: number[] | number[][];
    text?: string;
  }[];
  steps: {
    name: string;
    prompts: string[];
    steps: {
      step: number;
      input_ids: number[][];
      attention_mask: number[][];
      position_ids: number[][];
      past_sequence_length: number;
      last_logits: { top_indices: number[][]; top_values: number[][] };
    }[];
  }[];
}

const goldens = readGoldens(MODEL);
const extra = goldens as unknown as Goldens;

async function pipeline(): Promise<TextGenerationPipeline> {
  return new TextGenerationPipeline(await load(MODEL));
}

function int64Rows(tensor: { data: unknown; dims: readonly number[] }): number[][] {
  const [rows = 0, cols = 0] = tensor.dims;
  const data = Array.from(tensor.data as BigInt64Array, Number);
  return Array.from({ length: rows }, (_, r) => data.slice(r * cols, (r + 1) * cols));
}

describe('textGeneration', forPipeline('textGeneration'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const options = call.options as {
          max_new_tokens: number;
          return_full_text?: boolean;
          no_repeat_ngram_size?: number;
        };
        // Cases with generation_config keys (bad_words_ids, ...) run on a folder that has them.
        const keys = (call as { generation_config?: Record<string, unknown> }).generation_config;
        const gen = new TextGenerationPipeline(await loadWith(MODEL, keys), {
          maxNewTokens: options.max_new_tokens,
          ...(options.no_repeat_ngram_size === undefined
            ? {}
            : { noRepeatNgramSize: options.no_repeat_ngram_size }),
        });
        await gen.ready();
        const input = call.inputs as string | ChatMessage[];
        const [result] = await gen.run([input]);
        // Python returns the prompt plus the new text, or for chats the messages plus the answer.
        return asPython('textGeneration', result, {
          input,
          returnFullText: options.return_full_text !== false,
        });
      });
    }
  });

  describe('greedy ids equal generate()', GOLDEN, () => {
    for (const golden of extra.generation.filter((g) => typeof g.call.prompt === 'string')) {
      it(golden.name, async () => {
        const gen = await pipeline();
        const maxNewTokens = golden.call.options.max_new_tokens;
        const result = await gen.generate(golden.call.prompt as string, { maxNewTokens });
        expect(
          await gen.promptIds({ kind: 'text', text: golden.call.prompt as string }, undefined),
        ).toEqual(golden.prompt_ids);
        expect(result.tokenIds).toEqual(golden.new_ids);
        expect(result.text).toBe(golden.text);
        expect(result).toMatchObject({
          finishReason: 'length',
          promptTokens: golden.prompt_ids.length,
          generatedTokens: maxNewTokens,
        });
      });
    }

    // The step function with a left-padded batch: each row gets generate()'s tokens for the batch.
    for (const golden of extra.generation.filter((g) => Array.isArray(g.call.prompt))) {
      it(`${golden.name} (batched steps)`, async () => {
        const gen = await pipeline();
        const prompts = golden.call.prompt as string[];
        const rows = await Promise.all(
          prompts.map((p) => gen.promptIds({ kind: 'text', text: p }, undefined)),
        );
        let tokens: StepTokens = leftPad(rows, gen.model.tokenizer?.padId ?? 0);
        expect(tokens.ids).toEqual(golden.prompt_ids);
        expect(tokens.mask).toEqual(golden.attention_mask);
        let state: KvState = emptyKvState(gen.layout, rows.length);
        const out: number[][] = rows.map(() => []);
        for (let step = 0; step < golden.call.options.max_new_tokens; step += 1) {
          const result = await runStep(gen.model.session, gen.layout, state, tokens);
          state = result.state;
          const next = result.logits.map((l) => argmax(l));
          next.forEach((id, r) => out[r]?.push(id));
          tokens = { ids: next.map((id) => [id]) };
        }
        expect(out).toEqual(golden.new_ids);
      });
    }
  });

  describe('step feeds and logits', GOLDEN, () => {
    for (const golden of extra.steps) {
      it(golden.name, async ({ task }) => {
        const gen = await pipeline();
        const rows = await Promise.all(
          golden.prompts.map((p) => gen.promptIds({ kind: 'text', text: p }, undefined)),
        );
        let tokens: StepTokens = leftPad(rows, gen.model.tokenizer?.padId ?? 0);
        let state = emptyKvState(gen.layout, rows.length);
        let maxAbsDiff = 0;
        for (const step of golden.steps) {
          const feeds = hostFeeds(stepFeeds(gen.layout, state, tokens));
          expect(state.pastLength).toBe(step.past_sequence_length);
          expect(int64Rows(feeds['input_ids']!)).toEqual(step.input_ids);
          expect(int64Rows(feeds['attention_mask']!)).toEqual(step.attention_mask);
          expect(int64Rows(feeds['position_ids']!)).toEqual(step.position_ids);
          const result = await runStep(gen.model.session, gen.layout, state, tokens);
          const { top_indices: indices, top_values: values } = step.last_logits;
          const ours = indices.map((row, r) => row.map((i) => result.logits[r]?.[i] ?? NaN));
          const comparison = compareDeep(ours, values, 1e-4);
          maxAbsDiff = Math.max(maxAbsDiff, comparison.maxAbsDiff);
          expect(comparison.differences).toEqual([]);
          const next = result.logits.map((l) => argmax(l));
          expect(next).toEqual(indices.map((row) => row[0]));
          state = result.state;
          tokens = { ids: next.map((id) => [id]) };
        }
        task.meta.maxAbsDiff = maxAbsDiff;
        expect(maxAbsDiff).toBeLessThan(1e-4);
      });
    }
  });

  describe('chat template', GOLDEN, () => {
    for (const golden of extra.tokenization.filter((t) => t.call.messages !== undefined)) {
      it(golden.name, async () => {
        const gen = await pipeline();
        const ids = await gen.promptIds(
          { kind: 'chat', messages: golden.call.messages ?? [] },
          undefined,
        );
        expect(ids).toEqual(golden.output.input_ids_without_special_tokens);
        // The system prompt option gives the same prompt as a system message.
        const user = (golden.call.messages ?? []).filter((m) => m.role !== 'system');
        const system = golden.call.messages?.find((m) => m.role === 'system')?.content;
        expect(await gen.promptIds({ kind: 'chat', messages: user }, system)).toEqual(ids);
      });
    }
  });
});

describe('textGeneration', forPipeline('textGeneration'), () => {
  const prompt = 'Hello there';
  const temp: string[] = [];
  afterAll(async () => {
    for (const dir of temp) await rm(dir, { recursive: true, force: true });
  });

  it('samples reproducibly: the same seed gives the same tokens', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL), { maxNewTokens: 12 });
    const a = await gen.generate(prompt, { seed: 7, temperature: 1.5 });
    const b = await gen.generate(prompt, { seed: 7, temperature: 1.5 });
    const c = await gen.generate(prompt, { seed: 8, temperature: 1.5 });
    expect(a).toEqual(b);
    expect(c.tokenIds).not.toEqual(a.tokenIds);
  });

  it('temperature 0 and topK 1 sample exactly the greedy tokens', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL), { maxNewTokens: 12 });
    const greedy = await gen.generate(prompt);
    expect(
      (await gen.generate(prompt, { doSample: true, temperature: 0, seed: 1 })).tokenIds,
    ).toEqual(greedy.tokenIds);
    expect((await gen.generate(prompt, { topK: 1, seed: 3, temperature: 2 })).tokenIds).toEqual(
      greedy.tokenIds,
    );
    expect((await gen.generate(prompt, { topP: 1e-9, seed: 5 })).tokenIds).toEqual(greedy.tokenIds);
  });

  it('repetition penalty changes the greedy choice away from repeated tokens', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL), { maxNewTokens: 24 });
    const plain = await gen.generate(prompt);
    const penalized = await gen.generate(prompt, { repetitionPenalty: 10 });
    expect(new Set(plain.tokenIds).size).toBeLessThan(plain.tokenIds.length);
    expect(new Set(penalized.tokenIds).size).toBe(penalized.tokenIds.length);
  });

  it('stops on a stop sequence spanning tokens and leaves it out', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL), { maxNewTokens: 24 });
    const full = await gen.generate(prompt);
    // "as <59" straddles tokens ("as", " <", "59") of the greedy continuation.
    const stop = 's <5';
    const at = full.text.indexOf(stop);
    expect(at).toBeGreaterThan(0);
    const stopped = await gen.generate(prompt, { stopSequences: ['zzz', stop] });
    expect(stopped.finishReason).toBe('stop');
    expect(stopped.text).toBe(full.text.slice(0, at));
    expect(stopped.tokenIds).toEqual(full.tokenIds.slice(0, stopped.generatedTokens));
    expect(stopped.generatedTokens).toBeLessThan(full.generatedTokens);
  });

  it('streams one event per token whose texts add up to the result', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL), { maxNewTokens: 16 });
    for (const stopSequences of [[], ['bg']]) {
      const events: GenerationEvent[] = [];
      for await (const event of gen.stream(prompt, { stopSequences })) events.push(event);
      const done = events.at(-1);
      if (done?.type !== 'done') throw new Error('no done event');
      const tokens = events.filter((e) => e.type === 'token');
      expect(tokens.map((e) => e.tokenId)).toEqual(done.result.tokenIds);
      expect(tokens.map((e) => e.text).join('')).toBe(done.result.text);
      expect(done.result).toEqual(await gen.generate(prompt, { stopSequences }));
    }
  });

  it('ends on any EOS id of generation_config.json (a list)', async () => {
    const model = await load(MODEL);
    const greedy = await new TextGenerationPipeline(model, { maxNewTokens: 24 }).generate(prompt);
    const eos = greedy.tokenIds[5] ?? -1;
    const folder = await mkdtemp(join(tmpdir(), 'hugot-gen-'));
    temp.push(folder);
    await writeFile(
      join(folder, 'generation_config.json'),
      JSON.stringify({ eos_token_id: [2, eos] }),
    );
    const gen = new TextGenerationPipeline({ ...model, folder }, { maxNewTokens: 24 });
    const result = await gen.generate(prompt);
    expect(result.finishReason).toBe('eos');
    expect(result.tokenIds).toEqual(greedy.tokenIds.slice(0, 6));
    expect(result.generatedTokens).toBe(6);
  });

  it('rejects bad inputs and options naming the field', async () => {
    const gen = new TextGenerationPipeline(await load(MODEL));
    await expect(gen.run([])).rejects.toMatchObject({ name: 'InputError', field: 'inputs' });
    await expect(gen.run([42 as unknown as string])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[0]',
    });
    await expect(gen.run([[{ role: 'user' }] as unknown as ChatMessage[]])).rejects.toMatchObject({
      field: 'inputs[0].messages[0]',
    });
    expect(() => new TextGenerationPipeline(gen.model, { topP: 2 })).toThrow(/options\.topP/);
  });
});
