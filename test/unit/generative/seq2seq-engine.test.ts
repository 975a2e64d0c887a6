// Encoder–decoder requests on the generative engine: requests that arrive while others decode
// join at the next step and interleave token by token, and each one's output is still Python's
// (the same goldens as the batch path, scripts/models/kit/seq2seq.py).
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import type { SequenceEvent } from '../../../src/generative/protocol.ts';
import { CohortLoop } from '../../../src/generative/cohort-loop.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { Seq2SeqTextPipeline } from '../../../src/pipelines/seq2seq/seq2seq-text-pipeline.ts';
import { readGoldens } from '../../parity/goldens.ts';

const BART = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'bart-summarization');
const VIT_GPT2 = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'vit-gpt2-image-to-text',
);
const LLAVA = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'llava-image-text-to-text',
);
const GREEDY = { maxNewTokens: 16, numBeams: 1, doSample: false };
const store = new ModelStore();
const copies: string[] = [];
afterAll(async () => {
  await store.close();
  await Promise.all(copies.map((d) => rm(d, { recursive: true, force: true })));
});

/** A copy of the BART fixture whose generation_config.json also has `keys`. */
async function folderWith(keys: Record<string, unknown>): Promise<string> {
  if (Object.keys(keys).length === 0) return BART;
  const dir = await mkdtemp(join(tmpdir(), 'bart-'));
  copies.push(dir);
  await cp(BART, dir, { recursive: true });
  const file = join(dir, 'generation_config.json');
  const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  await writeFile(file, JSON.stringify({ ...config, ...keys }));
  return dir;
}

function golden(): { inputs: string[]; texts: string[] } {
  const case_ = readGoldens('bart-summarization').pipeline.find(
    (g) => g.name === 'summarization:greedy',
  );
  const inputs = (case_?.call.inputs ?? []) as string[];
  const texts = ((case_?.output ?? []) as { summary_text: string }[]).map((o) => o.summary_text);
  expect(inputs.length).toBe(4);
  return { inputs, texts };
}

async function loopOf(options: Record<string, unknown>, maxActive: number): Promise<CohortLoop> {
  const model = await store.load({ path: BART });
  return CohortLoop.create(new Seq2SeqTextPipeline('summarization', model, options), {
    maxActive,
  });
}

describe('CohortLoop', () => {
  it("interleaves requests that arrive mid-decode; every output equals Python's", async () => {
    const { inputs, texts } = golden();
    const loop = await loopOf(GREEDY, 3);
    const steps: SequenceEvent[][] = [];
    const step = async (): Promise<void> => {
      steps.push(await loop.step());
      expect(loop.stats().active).toBeLessThanOrEqual(3);
    };
    for (const id of [0, 1]) await loop.submit({ id, input: inputs[id] });
    await step();
    await step();
    for (const id of [2, 3]) await loop.submit({ id, input: inputs[id] });
    for (let n = 0; !loop.idle; n += 1) {
      expect(n).toBeLessThan(100);
      await step();
    }
    const events = steps.flat();
    for (const [id, text] of texts.entries()) {
      const done = events.find((e) => e.kind === 'done' && e.id === id);
      expect(done?.kind === 'done' && done.result.text).toBe(text);
      const tokens = events.filter((e) => e.kind === 'token' && e.id === id);
      expect(tokens.map((e) => (e.kind === 'token' ? e.text : '')).join('')).toBe(text);
      expect(tokens.map((e) => (e.kind === 'token' ? e.index : -1))).toEqual(
        tokens.map((_, i) => i),
      );
    }
    // The late pair's first step is one where the early pair decodes too (interleaving).
    const joined = steps.findIndex((s) => s.some((e) => e.kind === 'token' && e.id === 2));
    expect(joined).toBe(2);
    const early = new Set(
      steps[joined]?.filter((e) => e.kind === 'token' && e.id < 2).map((e) => e.id),
    );
    expect(early.size).toBeGreaterThan(0);
    // maxActive 3: the fourth waits until a row has left.
    const firstOf3 = steps.findIndex((s) => s.some((e) => e.kind === 'token' && e.id === 3));
    const firstDone = steps.findIndex((s) => s.some((e) => e.kind === 'done'));
    expect(firstOf3).toBeGreaterThan(firstDone);
  });

  it('applies noRepeatNgramSize, bad_words_ids / suppress_tokens and encoder_no_repeat_ngram_size as Python does', async () => {
    const goldens = readGoldens('bart-summarization').pipeline;
    const names = [
      'no_repeat_ngram_greedy',
      'bad_and_suppressed_tokens_greedy',
      'encoder_no_repeat_ngram_greedy',
    ];
    for (const name of names) {
      const case_ = goldens.find((g) => g.name === `summarization:${name}`);
      const call = case_?.call as unknown as {
        inputs: string[];
        options: { no_repeat_ngram_size?: number };
        generation_config?: Record<string, unknown>;
      };
      const texts = (case_?.output as { summary_text: string }[]).map((o) => o.summary_text);
      const model = await store.load({ path: await folderWith(call.generation_config ?? {}) });
      const options = { ...GREEDY, noRepeatNgramSize: call.options.no_repeat_ngram_size };
      const loop = await CohortLoop.create(
        new Seq2SeqTextPipeline('summarization', model, options),
        {
          maxActive: 4,
        },
      );
      for (const [id, input] of call.inputs.entries()) await loop.submit({ id, input });
      const events: SequenceEvent[] = [];
      while (!loop.idle) events.push(...(await loop.step()));
      const done = events.flatMap((e) => (e.kind === 'done' ? [[e.id, e.result.text]] : []));
      expect(new Map(done as [number, string][]), name).toEqual(new Map(texts.entries()));
    }
  });

  it('cancels one request mid-decode and leaves the others exact', async () => {
    const { inputs, texts } = golden();
    const loop = await loopOf(GREEDY, 8);
    await loop.submit({ id: 0, input: inputs[0] });
    await loop.submit({ id: 2, input: inputs[2] });
    await loop.submit({ id: 9, input: inputs[3], deadlineAt: Date.now() - 1 });
    const events = [...(await loop.step())];
    loop.cancel(0, 'aborted');
    while (!loop.idle) events.push(...(await loop.step()));
    const failed = events.filter((e) => e.kind === 'failed');
    expect(failed.map((e) => [e.id, e.kind === 'failed' && e.error.name])).toEqual([
      [9, 'DeadlineExceededError'],
      [0, 'CancelledError'],
    ]);
    const done = events.filter((e) => e.kind === 'done');
    expect(done.map((e) => [e.id, e.kind === 'done' && e.result.text])).toEqual([[2, texts[2]]]);
  });

  it('refuses beam search and per-request options, naming the field', async () => {
    await expect(loopOf({ maxNewTokens: 16, numBeams: 3 }, 4)).rejects.toThrow(ConfigError);
    await expect(loopOf({ maxNewTokens: 16, numBeams: 3 }, 4)).rejects.toMatchObject({
      field: 'options.numBeams',
    });
    const loop = await loopOf(GREEDY, 4);
    const refused = await loop.submit({ id: 1, input: 'text', options: { maxNewTokens: 4 } });
    expect(refused?.kind === 'failed' && refused.error.message).toMatch(/pipeline's options/);
    const notText = await loop.submit({ id: 2, input: 42 });
    expect(notText?.kind === 'failed' && notText.error.name).toBe('InputError');
    expect(loop.idle).toBe(true);
  });
});

describe('GenerativeEngine with an encoder–decoder task', () => {
  it("streams each request's tokens from a generation thread; outputs equal Python's", async () => {
    const { inputs, texts } = golden();
    const engine = await GenerativeEngine.start({
      model: { path: BART },
      task: 'summarization',
      pipelineOptions: GREEDY,
      threads: 1,
    });
    try {
      const outputs = await Promise.all(
        inputs.map(async (input) => {
          let streamed = '';
          let result = '';
          for await (const event of engine.submit(input)) {
            if (event.type === 'token') streamed += event.text;
            else result = event.result.text;
          }
          return { streamed, result };
        }),
      );
      expect(outputs.map((o) => o.result)).toEqual(texts);
      expect(outputs.map((o) => o.streamed)).toEqual(texts);
    } finally {
      await engine.close();
    }
  });

  it("captions images on the engine (imageToText); outputs equal Python's greedy goldens", async () => {
    const case_ = readGoldens('vit-gpt2-image-to-text').pipeline.find((g) => g.name === 'greedy');
    const images = (case_?.call.inputs ?? []) as string[];
    const expected = ((case_?.output ?? []) as { generated_text: string }[][]).map(
      ([o]) => o?.generated_text,
    );
    expect(images.length).toBeGreaterThan(2);
    const engine = await GenerativeEngine.start({
      model: { path: VIT_GPT2 },
      task: 'imageToText',
      pipelineOptions: { maxNewTokens: 12, numBeams: 1, doSample: false },
      threads: 1,
    });
    try {
      const streams = images.map((image) => engine.submit(join(VIT_GPT2, image)));
      const texts = await Promise.all(streams.map(async (s) => (await s.result).text));
      expect(texts).toEqual(expected);
      const corrupt = engine.submit(Buffer.from('not an image').toString('base64'));
      await expect(corrupt.result).rejects.toThrow(/cannot read an image/);
    } finally {
      await engine.close();
    }
  });

  it("answers image + prompt requests on the engine (imageTextToText); outputs equal Python's", async () => {
    const cases = readGoldens('llava-image-text-to-text').pipeline.filter(
      (g) => g.name.startsWith('text:') || g.name.startsWith('chat:'),
    );
    expect(cases.length).toBeGreaterThan(3);
    const engine = await GenerativeEngine.start({
      model: { path: LLAVA },
      task: 'imageTextToText',
      pipelineOptions: { maxNewTokens: 12, doSample: false },
      threads: 1,
      scheduler: { maxActive: 2, stepTokens: 64 },
    });
    try {
      const texts = await Promise.all(
        cases.map(async (c) => {
          const input = c.call.inputs as { image: string };
          let streamed = '';
          for await (const event of engine.submit({ ...input, image: join(LLAVA, input.image) }))
            if (event.type === 'token') streamed += event.text;
            else expect(event.result.text).toBe(streamed);
          return streamed;
        }),
      );
      expect(texts).toEqual(
        cases.map((c) => (c.output as { generated_text: string }[])[0]?.generated_text),
      );
    } finally {
      await engine.close();
    }
  });

  it('refuses a task it does not run', async () => {
    await expect(
      GenerativeEngine.start({ model: { path: BART }, task: 'fillMask' }),
    ).rejects.toThrow(/the generative engine runs textGeneration, text2textGeneration/);
  });
});
