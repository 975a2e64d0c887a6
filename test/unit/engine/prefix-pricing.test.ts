// Token pricing stops at what truncation keeps: a long text is priced from a word-aligned prefix
// when that prefix already reaches the cap. The price must be exactly the full tokenization's,
// capped, for every text, with two real tokenizers (WordPiece and byte-level BPE).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inputCost, wordPrefix } from '../../../src/engine/input-cost.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const texts = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text);
// Long texts built from the corpus, and ones a prefix cannot settle (no space, few words).
const long = [
  texts.join(' '),
  texts.join('\n\n'),
  'x'.repeat(50_000),
  `${'supercalifragilistic '.repeat(10)}${'a'.repeat(20_000)}`,
  `${'word '.repeat(3_000)}`,
  // Runs of spaces: a byte-level pre-tokenizer groups them, so a cut inside a run changes the
  // token at the cut.
  `${'two  spaces   three    four '.repeat(1_000)}`,
  texts.join('   ').replaceAll(' ', '  '),
];

describe('word-aligned prefix pricing', () => {
  it('cuts at a space within the limit, and only texts longer than it', () => {
    expect(wordPrefix('short text', 100)).toBeUndefined();
    expect(wordPrefix('one two three four', 9)).toBe('one two');
    expect(wordPrefix('nospacesatall', 5)).toBeUndefined();
    expect(wordPrefix('anything', Number.POSITIVE_INFINITY)).toBeUndefined();
  });

  for (const [name, folder] of [
    ['WordPiece (all-MiniLM-L6-v2)', 'models/all-MiniLM-L6-v2-int8'],
    ['byte-level BPE (roberta fixture)', 'test/fixtures/models/roberta-text-classification'],
  ] as const) {
    it(`prices every text exactly as the full tokenization, capped: ${name}`, async () => {
      const tokenizer = await TextTokenizer.load(join(ROOT, folder));
      for (const cap of [16, 128]) {
        const context = {
          task: 'featureExtraction',
          tokenizer,
          options: { maxLength: cap },
          pricing: 'tokens' as const,
        };
        let prefixed = 0;
        for (const text of [...texts, ...long]) {
          const [full] = await tokenizer.encode([text], { truncation: false });
          const limit = Math.min(cap, tokenizer.maxLength ?? Number.POSITIVE_INFINITY);
          const expected = Math.min(full?.ids.length ?? 1, limit);
          expect((await inputCost(text, context)).tokens).toBe(expected);
          if (wordPrefix(text, cap * 8) !== undefined) prefixed += 1;
        }
        // The prefix path was taken (the test would prove nothing otherwise).
        expect(prefixed).toBeGreaterThan(5);
      }
    });
  }

  it("prices a textClassification input at its maxLength, else at the tokenizer's", async () => {
    const folder = 'test/fixtures/models/roberta-text-classification';
    const tokenizer = await TextTokenizer.load(join(ROOT, folder));
    const context = (options: Record<string, unknown>) => ({
      task: 'textClassification',
      tokenizer,
      options,
      pricing: 'tokens' as const,
    });
    const text = long[0]!;
    expect((await inputCost(text, context({ maxLength: 24 }))).tokens).toBe(24);
    expect(tokenizer.maxLength).toBeGreaterThan(24);
    expect((await inputCost(text, context({}))).tokens).toBe(tokenizer.maxLength);
  });

  for (const [name, folder] of [
    ['WordPiece (all-MiniLM-L6-v2)', 'models/all-MiniLM-L6-v2-int8'],
    ['byte-level BPE (roberta fixture)', 'test/fixtures/models/roberta-text-classification'],
  ] as const) {
    it(`a truncating encode reads only the prefix and equals the whole text's: ${name}`, async () => {
      const tokenizer = await TextTokenizer.load(join(ROOT, folder));
      for (const cap of [16, 128]) {
        const all = [...texts, ...long];
        const cut = await tokenizer.encode(all, { maxLength: cap });
        const whole = await tokenizer.encode(all, { truncation: false });
        let prefixed = 0;
        all.forEach((text, i) => {
          const full = whole[i]!;
          const got = cut[i]!;
          if (wordPrefix(text, cap * 8) !== undefined) prefixed += 1;
          // One special token first and one last, as both tokenizers' templates add.
          const keep = <T>(xs: readonly T[]): T[] =>
            xs.length <= cap ? [...xs] : [...xs.slice(0, cap - 1), xs.at(-1)!];
          expect(got.ids, `text ${i}`).toEqual(keep(full.ids));
          expect(got.offsets).toEqual(keep(full.offsets));
          expect(got.attentionMask).toEqual(keep(full.attentionMask));
          expect(got.specialTokensMask).toEqual(keep(full.specialTokensMask));
        });
        expect(prefixed).toBeGreaterThan(5);
      }
    });
  }
});
