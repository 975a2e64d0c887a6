// Encodings made on the main thread and carried to an inference thread: the thread's tokenizer
// answers the pipeline's plain encode of those texts from them, equal to its own encode, and
// nothing else.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InferenceError } from '../../../src/errors.ts';
import { createHugot, type Hugot } from '../../../src/hugot.ts';
import { plainEncodeLength } from '../../../src/pipelines/runtime/carried-encoding.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const FOLDER = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'bert-feature-extraction',
);
const texts = [
  'The quick brown fox jumps over the lazy dog.',
  'Stream processing with transformers, one record at a time.',
  Array.from({ length: 80 }, (_, i) => `token${i}`).join(' '),
];

let main: TextTokenizer;
let thread: TextTokenizer;
let fresh: TextTokenizer;

beforeAll(async () => {
  [main, thread, fresh] = await Promise.all([
    TextTokenizer.load(FOLDER),
    TextTokenizer.load(FOLDER),
    TextTokenizer.load(FOLDER),
  ]);
});

describe('a thread tokenizer holding carried encodings', () => {
  it("answers the plain encode of the carried texts with the thread's own encodings", async () => {
    const carried = await main.encodeToCarry(texts, 16);
    // Structured clone is how they reach a thread.
    const release = thread.carry(structuredClone(carried));
    const before = thread.carriedCount;
    const answered = await thread.encode(texts, { maxLength: 16 });
    const own = await fresh.encode(texts, { maxLength: 16 });
    expect(thread.carriedCount - before).toBe(texts.length);
    expect(answered.map((e) => e.ids)).toEqual(own.map((e) => e.ids));
    expect(answered.map((e) => e.typeIds)).toEqual(own.map((e) => e.typeIds));
    expect(answered.map((e) => e.attentionMask)).toEqual(own.map((e) => e.attentionMask));
    expect(answered[2]?.ids).toHaveLength(16);
    // What a carried encoding lacks is refused by name, never made up.
    expect(() => answered[0]?.offsets).toThrow(InferenceError);
    expect(() => answered[0]?.offsets).toThrow(/no offsets/);
    release();
  });

  it('encodes the texts it does not hold and keeps the input order', async () => {
    const release = thread.carry(await main.encodeToCarry([texts[1] as string], 16));
    const before = thread.carriedCount;
    const answered = await thread.encode(texts, { maxLength: 16 });
    expect(thread.carriedCount - before).toBe(1);
    expect(answered.map((e) => e.ids)).toEqual(
      (await fresh.encode(texts, { maxLength: 16 })).map((e) => e.ids),
    );
    release();
  });

  it('answers nothing for other settings, another length, or once released', async () => {
    const release = thread.carry(await main.encodeToCarry(texts, 16));
    const before = thread.carriedCount;
    await thread.encode(texts, { maxLength: 12 });
    await thread.encode(texts, { maxLength: 16, truncation: false });
    await thread.encode(texts, { maxLength: 16, addSpecialTokens: false });
    await thread.encode(texts, { maxLength: 16, stride: 4 });
    await thread.encode(texts, { maxLength: 16, truncation: 'only_first' });
    expect(thread.carriedCount).toBe(before);
    release();
    release();
    await thread.encode(texts, { maxLength: 16 });
    expect(thread.carriedCount).toBe(before);
  });

  it('keeps a text two batches carried until both have released it', async () => {
    const carried = await main.encodeToCarry([texts[0] as string], 16);
    const first = thread.carry(carried);
    const second = thread.carry(carried);
    first();
    const before = thread.carriedCount;
    await thread.encode([texts[0] as string], { maxLength: 16 });
    expect(thread.carriedCount - before).toBe(1);
    second();
    await thread.encode([texts[0] as string], { maxLength: 16 });
    expect(thread.carriedCount - before).toBe(1);
  });

  it('takes the plain length from the options or the tokenizer', () => {
    expect(plainEncodeLength({}, 512)).toBe(512);
    expect(plainEncodeLength({ maxLength: 64 }, 512)).toBe(64);
    expect(plainEncodeLength({ truncation: 'longest_first', maxLength: 64 }, 512)).toBe(64);
    expect(plainEncodeLength({ maxLength: 64, stride: 0 }, 512)).toBe(64);
    expect(plainEncodeLength({ truncation: false }, 512)).toBeUndefined();
    expect(plainEncodeLength({ stride: 8 }, 512)).toBeUndefined();
    expect(plainEncodeLength({ addSpecialTokens: false }, 512)).toBeUndefined();
    expect(plainEncodeLength({}, undefined)).toBeUndefined();
  });
});

describe('a pipeline run with carried encodings', () => {
  let hugot: Hugot;
  beforeAll(async () => {
    hugot = createHugot();
    hugot.registerModel('fe', { path: FOLDER });
    await hugot.registerPipeline('embed', {
      task: 'featureExtraction',
      model: 'fe',
      options: { maxLength: 16 },
    });
  });
  afterAll(async () => {
    await hugot.close();
  });

  it('gives the outputs of its own encodes without making any, and holds none after', async () => {
    const tokenizer = hugot.pipeline('embed').model.tokenizer as TextTokenizer;
    const expected = await hugot.run<Float32Array>('embed', texts);
    const carried = await main.encodeToCarry(texts, 16);
    const before = tokenizer.carriedCount;
    const got = await hugot.run<Float32Array>('embed', texts, [
      carried[0] ?? null,
      null,
      carried[2] ?? null,
    ]);
    expect(tokenizer.carriedCount - before).toBe(2);
    expect(got).toEqual(expected);
    await hugot.run('embed', texts);
    expect(tokenizer.carriedCount - before).toBe(2);
  });
});
