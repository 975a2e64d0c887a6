// The inference thread reads only ids from the Rust encoding up front; the attention mask is
// derived (no instance pads) and a single text's type ids are zeros when the post-processor says
// so. Both must equal what the Rust encoding itself holds, for every tokenizer kind and for
// single texts, truncated texts with overflowing windows, and pairs.
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from 'tokenizers';
import { afterAll, describe, expect, it } from 'vitest';
import { singleTypeIdsAreZero } from '../../../src/pipelines/runtime/post-processor.ts';
import {
  TextTokenizer,
  type TextInput,
  type TokenizedText,
} from '../../../src/pipelines/runtime/text-tokenizer.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const fixture = (name: string): string => join(ROOT, 'test', 'fixtures', 'models', name);
const texts = readFileSync(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text)
  .slice(0, 6);
const inputs: TextInput[] = [...texts, texts.join(' '), [texts[0]!, texts[1]!], ['a b', 'c d e']];

// A BERT tokenizer whose template marks a single text with type 1: the ids must then come from
// the encoding, not be assumed.
const scratch = mkdtempSync(join(tmpdir(), 'lazy-encoding-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
function typeOneFolder(): string {
  const folder = join(scratch, 'bert-type-one');
  cpSync(fixture('bert-feature-extraction'), folder, { recursive: true });
  const json = JSON.parse(readFileSync(join(folder, 'tokenizer.json'), 'utf8')) as {
    post_processor: { single: Record<string, { type_id: number }>[] };
  };
  for (const piece of json.post_processor.single)
    for (const part of Object.values(piece)) part.type_id = 1;
  writeFileSync(join(folder, 'tokenizer.json'), JSON.stringify(json));
  return folder;
}

/** What the Rust encoding holds, with the same truncation the TextTokenizer applies. */
async function rustFields(
  folder: string,
  input: TextInput,
  maxLength: number,
  stride: number,
): Promise<{ typeIds: number[]; attentionMask: number[]; overflowTypes: number[][] }> {
  const tokenizer = Tokenizer.fromString(readFileSync(join(folder, 'tokenizer.json'), 'utf8'));
  tokenizer.disablePadding();
  tokenizer.setTruncation(maxLength, { stride });
  const encoding =
    typeof input === 'string'
      ? await tokenizer.encode(input, null)
      : await tokenizer.encode(input[0], input[1]);
  return {
    typeIds: encoding.getTypeIds(),
    attentionMask: encoding.getAttentionMask(),
    overflowTypes: encoding.getOverflowing().map((o) => o.getTypeIds()),
  };
}

describe('lazily read encoding fields', () => {
  const cases = [
    ['WordPiece, template', fixture('bert-feature-extraction')],
    ['byte-level BPE, RobertaProcessing', fixture('roberta-text-classification')],
    ['Unigram, template without CLS', fixture('t5-text2text')],
    ['Llama, template with BOS', fixture('llama-causal-lm')],
    ['WordPiece, single template of type 1', typeOneFolder()],
  ] as const;
  for (const [name, folder] of cases) {
    it(`type ids and attention mask equal the Rust encoding's: ${name}`, async () => {
      const tokenizer = await TextTokenizer.load(folder);
      for (const [maxLength, stride] of [
        [512, 0],
        [16, 4],
      ] as const) {
        const encoded: TokenizedText[] = [];
        for (const input of inputs)
          encoded.push(...(await tokenizer.encode([input], { maxLength, stride })));
        for (const [i, input] of inputs.entries()) {
          const rust = await rustFields(folder, input, maxLength, stride);
          const ours = encoded[i]!;
          expect(ours.typeIds, `${name} input ${i} at ${maxLength}`).toEqual(rust.typeIds);
          expect(ours.attentionMask).toEqual(rust.attentionMask);
          expect(ours.attentionMask).toHaveLength(ours.ids.length);
          expect(ours.overflowing.map((o) => o.typeIds)).toEqual(rust.overflowTypes);
        }
      }
    });
  }

  it('a single text of the type-1 template really has type 1 (the case is not vacuous)', async () => {
    const tokenizer = await TextTokenizer.load(typeOneFolder());
    const [encoded] = await tokenizer.encode(['hello world']);
    expect(new Set(encoded!.typeIds)).toEqual(new Set([1]));
  });
});

describe('singleTypeIdsAreZero', () => {
  it('knows the post-processors that leave a single text at type 0', () => {
    expect(singleTypeIdsAreZero(null)).toBe(true);
    expect(singleTypeIdsAreZero({ type: 'BertProcessing' })).toBe(true);
    expect(singleTypeIdsAreZero({ type: 'RobertaProcessing' })).toBe(true);
    expect(singleTypeIdsAreZero({ type: 'ByteLevel' })).toBe(true);
    const template = (typeId: number): unknown => ({
      type: 'TemplateProcessing',
      single: [
        { SpecialToken: { id: '[CLS]', type_id: 0 } },
        { Sequence: { id: 'A', type_id: typeId } },
      ],
    });
    expect(singleTypeIdsAreZero(template(0))).toBe(true);
    expect(singleTypeIdsAreZero(template(1))).toBe(false);
    expect(
      singleTypeIdsAreZero({ type: 'Sequence', processors: [{ type: 'ByteLevel' }, template(0)] }),
    ).toBe(true);
    expect(
      singleTypeIdsAreZero({ type: 'Sequence', processors: [{ type: 'ByteLevel' }, template(1)] }),
    ).toBe(false);
  });

  it('reads the ids from the encoding for anything it does not know', () => {
    expect(singleTypeIdsAreZero({ type: 'SomethingNew' })).toBe(false);
    expect(singleTypeIdsAreZero('TemplateProcessing')).toBe(false);
    expect(singleTypeIdsAreZero({ type: 'TemplateProcessing' })).toBe(false);
  });
});
