// ASCII texts go to a twin tokenizer that does not strip accents (ascii-twin.ts): the encodings
// must be the original tokenizer's in every field, for English text and for ASCII's odd corners
// (control characters, tabs, runs of spaces, capitals), truncated or whole, alone or mixed with
// texts that are not ASCII, which must keep the original (the twin would encode them otherwise).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from 'tokenizers';
import { describe, expect, it } from 'vitest';
import { asciiTwinJson, isAscii } from '../../../src/pipelines/runtime/ascii-twin.ts';
import {
  TextTokenizer,
  type EncodeOptions,
  type TokenizedText,
} from '../../../src/pipelines/runtime/text-tokenizer.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-token-classification');
const JSON_TEXT = readFileSync(join(MODEL, 'tokenizer.json'), 'utf8');
const corpus = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text);
const corners = [
  'Tabs\tand\r\nCRLF,   runs of spaces , and CAPITALS: HeLLo WoRLD!',
  'Controls \u0000\u0001\u0007\u001b[0m and DEL \u007f between words',
  'Punctuation: (a) [b] {c} <d> \'e\' "f" #g $h %i &j *k +l -m /n =o ?p @q \\r ^s _t `u |v ~w',
  'Numbers 3.14159 1,000,000 0x7f 2026-12-06 and e-mail me@example.com',
  '',
  ' ',
];
const others = ['Café Ñandú, naïve façade', 'Ünïcödé ÀÉÎÕÜ', '東京 tower', 'Zoë — “quotes” …'];

function fields(e: TokenizedText): unknown {
  return {
    ids: e.ids,
    typeIds: e.typeIds,
    attentionMask: e.attentionMask,
    specialTokensMask: e.specialTokensMask,
    offsets: e.offsets,
    wordIds: e.wordIds,
    sequenceIds: e.sequenceIds,
    overflowing: e.overflowing.map(fields),
  };
}

describe('asciiTwinJson', () => {
  const bert = (normalizer: object | null): string =>
    JSON.stringify({ ...(JSON.parse(JSON_TEXT) as object), normalizer });

  it('turns off accent stripping where a BERT normalizer strips (explicitly or by lowercasing)', () => {
    for (const normalizer of [
      { type: 'BertNormalizer', strip_accents: null, lowercase: true },
      { type: 'BertNormalizer', strip_accents: true, lowercase: false },
      { type: 'BertNormalizer' },
    ]) {
      const twin = asciiTwinJson(bert(normalizer));
      expect(twin, JSON.stringify(normalizer)).toBeDefined();
      const parsed = JSON.parse(twin as string) as { normalizer: object; model: unknown };
      expect(parsed.normalizer).toEqual({ ...normalizer, strip_accents: false });
      expect(parsed.model).toEqual((JSON.parse(JSON_TEXT) as { model: unknown }).model);
    }
  });

  it('gives none where there is nothing to save', () => {
    expect(asciiTwinJson(bert({ type: 'BertNormalizer', strip_accents: false }))).toBeUndefined();
    expect(
      asciiTwinJson(bert({ type: 'BertNormalizer', strip_accents: null, lowercase: false })),
    ).toBeUndefined();
    expect(asciiTwinJson(bert({ type: 'NFC' }))).toBeUndefined();
    expect(asciiTwinJson(bert(null))).toBeUndefined();
  });

  it('tells ASCII from the rest', () => {
    expect(isAscii('plain \u0000\u007f text')).toBe(true);
    expect(isAscii('')).toBe(true);
    expect(isAscii('caf\u00e9')).toBe(false);
    expect(isAscii('\u0080')).toBe(false);
  });
});

describe('TextTokenizer with its ASCII twin', () => {
  const ascii = [...corpus.filter(isAscii), ...corners];

  it('the fixtures hold both kinds of text', () => {
    expect(corpus.filter(isAscii).length).toBeGreaterThan(20);
    expect(corpus.filter((t) => !isAscii(t)).length).toBeGreaterThan(0);
  });

  it.each<[string, EncodeOptions]>([
    ['truncated at 16', { maxLength: 16 }],
    ['truncated at 16 with a stride', { maxLength: 16, stride: 4 }],
    ['whole', { truncation: false }],
  ])('encodes every text exactly as the tokenizer.json does, %s', async (_, options) => {
    const twinned = await TextTokenizer.load(MODEL);
    const plain = await TextTokenizer.load(MODEL, undefined, 'now', { asciiTwins: false });
    const mixed = [...corpus, ...corners, ...others];
    expect((await twinned.encode(mixed, options)).map(fields)).toEqual(
      (await plain.encode(mixed, options)).map(fields),
    );
    // One at a time too (a lone text takes encode, not encodeBatch).
    for (const text of [...corners, ...others])
      expect((await twinned.encode([text], options)).map(fields)).toEqual(
        (await plain.encode([text], options)).map(fields),
      );
  });

  it('keeps texts that are not ASCII on the original, which the twin would encode otherwise', async () => {
    const twin = Tokenizer.fromString(asciiTwinJson(JSON_TEXT) as string);
    const tokenizer = await TextTokenizer.load(MODEL);
    for (const text of others.slice(0, 2)) {
      const viaTwin = (await twin.encode(text)).getIds();
      expect((await tokenizer.encode([text]))[0]?.ids).not.toEqual(viaTwin);
    }
  });

  it('holds one Rust tokenizer for ASCII text, and builds the original at the first other text', async () => {
    const tokenizer = await TextTokenizer.load(MODEL);
    expect(tokenizer.instanceCount).toBe(1);
    await tokenizer.encode(ascii, { maxLength: 16 });
    expect(tokenizer.instanceCount).toBe(1);
    await tokenizer.encode([others[0] as string], { maxLength: 16 });
    expect(tokenizer.instanceCount).toBe(2);
    const plain = await TextTokenizer.load(MODEL, undefined, 'now', { asciiTwins: false });
    expect(tokenizer.vocabSize()).toBe(plain.vocabSize());
    expect(tokenizer.tokenId('hello')).toBe(plain.tokenId('hello'));
  });
});
