// Our tokenizer wrapper against Python's `tokenizer(text, text_pair, ...)` on every model's
// tokenization goldens: ids, type ids, attention masks, tokens and character offsets.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TextTokenizer, type TokenizedText } from '../../src/pipelines/runtime/text-tokenizer.ts';
import { FIXTURES, modelPath, readGoldens, type TokenizationCase } from './goldens.ts';
import { tokenizerCase } from './parity-case.ts';
import { referenceOf } from './reference.ts';

/** The tokenizer a model folder holds, by content: fixtures sharing one count as one. */
function tokenizerOf(model: string): string {
  const file = join(modelPath(model), 'tokenizer.json');
  return existsSync(file) ? referenceOf(readFileSync(file, 'utf8')) : model;
}

const MODELS = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .filter((name) => (readGoldens(name).tokenization ?? []).length > 0);

interface Row {
  input_ids: number[];
  token_type_ids?: number[];
  attention_mask: number[];
  offset_mapping: [number, number][];
  tokens: string[];
}

function asRow(tokenizer: TextTokenizer, e: TokenizedText, expected: Row): Row {
  const row: Row = {
    input_ids: e.ids,
    attention_mask: e.attentionMask,
    offset_mapping: e.offsets,
    tokens: e.ids.map((id) => tokenizer.idToToken(id) ?? '?'),
  };
  if (expected.token_type_ids !== undefined) row.token_type_ids = e.typeIds;
  return row;
}

/** Python pads with the pad token, mask 0, type 0 and offsets (0, 0), on the tokenizer's side. */
function padTo(row: Row, width: number, padId: number, padToken: string, left: boolean): Row {
  const extra = width - row.input_ids.length;
  const fill = <T>(values: T[], value: T): T[] => {
    const padding = Array.from({ length: extra }, () => value);
    return left ? [...padding, ...values] : [...values, ...padding];
  };
  const padded: Row = {
    input_ids: fill(row.input_ids, padId),
    attention_mask: fill(row.attention_mask, 0),
    offset_mapping: fill(row.offset_mapping, [0, 0]),
    tokens: fill(row.tokens, padToken),
  };
  if (row.token_type_ids !== undefined) padded.token_type_ids = fill(row.token_type_ids, 0);
  return padded;
}

async function encodeLikePython(
  tokenizer: TextTokenizer,
  golden: TokenizationCase,
): Promise<unknown> {
  const {
    text,
    text_pair: pair = null,
    options,
  } = golden.call as TokenizationCase['call'] & { text: string | string[] };
  const truncation = options['truncation'];
  const encodeOptions = {
    truncation:
      truncation === true
        ? ('longest_first' as const)
        : typeof truncation === 'string'
          ? (truncation as 'only_second')
          : (false as const),
    ...(typeof options['max_length'] === 'number' ? { maxLength: options['max_length'] } : {}),
    ...(options['add_special_tokens'] === false ? { addSpecialTokens: false } : {}),
  };
  const texts = Array.isArray(text) ? text : [text];
  const encoded = await tokenizer.encode(
    texts.map((t) => (pair === null ? t : ([t, pair] as const))),
    encodeOptions,
  );
  if (!Array.isArray(text)) return asRow(tokenizer, encoded[0] as TokenizedText, golden.output);
  const expected = golden.output as unknown as { [K in keyof Row]: Row[K][] };
  const rows = encoded.map((e, i) =>
    asRow(tokenizer, e, {
      ...golden.output,
      token_type_ids: expected.token_type_ids?.[i],
    } as Row),
  );
  const width = Math.max(...rows.map((r) => r.input_ids.length));
  const left = tokenizer.paddingSide === 'left';
  const padded = rows.map((r) =>
    padTo(r, width, tokenizer.padId, tokenizer.special.pad ?? '[PAD]', left),
  );
  const columns = (key: keyof Row): unknown[] => padded.map((r) => r[key]);
  const result: Record<string, unknown> = {
    input_ids: columns('input_ids'),
    attention_mask: columns('attention_mask'),
    offset_mapping: columns('offset_mapping'),
    tokens: columns('tokens'),
  };
  if (expected.token_type_ids !== undefined) result['token_type_ids'] = columns('token_type_ids');
  return result;
}

describe('tokenizer', () => {
  for (const model of MODELS) {
    describe(model, () => {
      const identity = tokenizerOf(model);
      // Chat-template cases belong to the text-generation tests.
      for (const golden of readGoldens(model).tokenization.filter((c) => 'text' in c.call)) {
        it(golden.name, tokenizerCase(identity, [golden.call, golden.output]), async () => {
          const tokenizer = await TextTokenizer.load(modelPath(model));
          expect(await encodeLikePython(tokenizer, golden)).toEqual(golden.output);
        });
      }
    });
  }
});
