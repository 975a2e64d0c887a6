// A TextTokenizer holds one Rust tokenizer per truncation setting. The one made at load goes to
// the first setting an encode asks for, so a pipeline that only truncates holds a single
// instance; and an instance reached that way must encode exactly as one made for the setting.
// Built on demand (an inference thread whose encodes arrive carried), it holds none until a call
// needs one.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ModelFolderError } from '../../../src/errors.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-feature-extraction');
const texts = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text)
  .slice(0, 8);
const truncated = { truncation: 'longest_first', maxLength: 12 } as const;

describe('TextTokenizer instances', () => {
  it('truncates on the instance made at load, as a fresh instance for that setting does', async () => {
    const claimed = await TextTokenizer.load(MODEL);
    const padId = claimed.padId;
    const ids = (await claimed.encode(texts, truncated)).map((e) => e.ids);
    expect(claimed.instanceCount).toBe(1);

    // The reference asks for the untruncated instance first, so its truncating one is new.
    const reference = await TextTokenizer.load(MODEL);
    await reference.encode(texts, { truncation: false });
    expect((await reference.encode(texts, truncated)).map((e) => e.ids)).toEqual(ids);
    expect(reference.instanceCount).toBe(2);
    expect(ids.every((row) => row.length <= 12)).toBe(true);
    expect(ids.some((row) => row.length === 12)).toBe(true);
    expect(padId).toBe(reference.padId);
  });

  it('makes the untruncated instance when a later encode needs it', async () => {
    const tokenizer = await TextTokenizer.load(MODEL);
    await tokenizer.encode(texts, truncated);
    expect(tokenizer.instanceCount).toBe(1);
    const whole = (await tokenizer.encode(texts, { truncation: false })).map((e) => e.ids);
    expect(tokenizer.instanceCount).toBe(2);
    expect(Math.max(...whole.map((row) => row.length))).toBeGreaterThan(12);
    const fresh = await TextTokenizer.load(MODEL);
    expect((await fresh.encode(texts, { truncation: false })).map((e) => e.ids)).toEqual(whole);
    // Decoding and lookups read the vocabulary, whichever settings the instance carries.
    expect(await tokenizer.decode(whole[0]!, true)).toBe(await fresh.decode(whole[0]!, true));
    expect(tokenizer.vocabSize()).toBe(fresh.vocabSize());
  });
});

describe('a tokenizer built on demand', () => {
  it('holds no Rust tokenizer until an encode needs one, and answers special ids without one', async () => {
    const eager = await TextTokenizer.load(MODEL);
    const lazy = await TextTokenizer.load(MODEL, undefined, 'onDemand');
    expect(lazy.instanceCount).toBe(0);
    expect(lazy.padId).toBe(eager.padId);
    expect(lazy.tokenId(lazy.special.cls)).toBe(eager.tokenId(eager.special.cls));
    expect(lazy.instanceCount).toBe(0);
    const ids = (await lazy.encode(texts, truncated)).map((e) => e.ids);
    expect(lazy.instanceCount).toBe(1);
    expect(ids).toEqual((await eager.encode(texts, truncated)).map((e) => e.ids));
    // A vocabulary lookup reuses the instance the encode built.
    expect(lazy.tokenId('the')).toBe(eager.tokenId('the'));
    expect(lazy.instanceCount).toBe(1);
  });

  it('fails a tokenizer.json Rust cannot read at load, or at the first call on demand', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'hugot-tokenizer-'));
    try {
      const json = JSON.parse(readFileSync(join(MODEL, 'tokenizer.json'), 'utf8')) as Record<
        string,
        unknown
      >;
      await writeFile(
        join(folder, 'tokenizer.json'),
        JSON.stringify({ ...json, model: { type: 'NoSuchModel' } }),
      );
      await expect(TextTokenizer.load(folder)).rejects.toThrow(ModelFolderError);
      const lazy = await TextTokenizer.load(folder, undefined, 'onDemand');
      const error = await lazy.encode(['some text']).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(error).toBeInstanceOf(ModelFolderError);
      expect((error as ModelFolderError).message).toMatch(/tokenizer\.json could not be loaded/);
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
