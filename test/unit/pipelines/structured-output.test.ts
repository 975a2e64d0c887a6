// Structured output's parts on their own: JSON Schema -> regex, regex -> DFA, the tokenizer's
// vocabulary as bytes, and the token masks walked from a DFA state, on real tokenizers (the tiny
// fixture's sentencepiece-style one, and SmolLM2's byte-level BPE when models:fetch has run).
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Ajv from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { parseGenerationOptions } from '../../../src/pipelines/generation/generation-options.ts';
import { CharDfa, PatternError } from '../../../src/pipelines/generation/structured/char-dfa.ts';
import { FormatCursor } from '../../../src/pipelines/generation/structured/format-constraint.ts';
import {
  jsonSchemaRegex,
  UnsupportedSchemaError,
} from '../../../src/pipelines/generation/structured/json-schema-regex.ts';
import { formatDfa } from '../../../src/pipelines/generation/structured/response-format.ts';
import {
  NOWHERE,
  TokenMasks,
  TokenTrie,
} from '../../../src/pipelines/generation/structured/token-masks.ts';
import { tokenVocabulary } from '../../../src/pipelines/generation/structured/token-vocabulary.ts';
import { seededRandom } from '../../../src/pipelines/runtime/random.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const FIXTURE = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const SMOLLM2 = join(
  import.meta.dirname,
  '..',
  '..',
  '..',
  '.cache',
  'models',
  'smollm2-135m-instruct',
);

const person = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    score: { type: 'number' },
    tags: { type: 'array', items: { enum: ['a', 'b'] }, maxItems: 3 },
    kind: { anyOf: [{ const: 'x' }, { type: 'null' }] },
    when: { type: 'string', format: 'date' },
  },
  required: ['name', 'age'],
};

describe('jsonSchemaRegex', () => {
  const matches = (schema: object, text: string): boolean =>
    new RegExp(`^(?:${jsonSchemaRegex(schema)})$`, 'u').test(text);

  it('accepts what the schema accepts, in declared order, required ones always', () => {
    expect(matches(person, '{"name":"Ann","age":3}')).toBe(true);
    expect(matches(person, '{ "name": "Ann", "age": -3, "tags": ["a", "b"] }')).toBe(true);
    expect(
      matches(
        person,
        '{"name":"A\\"n","age":0,"score":1.5e3,"tags":[],"kind":null,"when":"2024-02-29"}',
      ),
    ).toBe(true);
    expect(matches(person, '{"name":"Ann"}')).toBe(false); // age is required
    expect(matches(person, '{"age":3,"name":"Ann"}')).toBe(false); // declared order
    expect(matches(person, '{"name":"Ann","age":03}')).toBe(false);
    expect(matches(person, '{"name":"Ann","age":3,"tags":["a","a","b","b"]}')).toBe(false);
    expect(matches(person, '{"name":"Ann","age":3,"kind":"y"}')).toBe(false);
    expect(matches(person, '{"name":"Ann","age":3,}')).toBe(false);
    expect(matches(person, `{"name":"${'x'.repeat(13)}","age":3}`)).toBe(false);
  });

  it('handles only-optional properties, $ref to $defs, and type lists', () => {
    const schema = {
      type: 'object',
      properties: { a: { $ref: '#/$defs/flag' }, b: { type: ['integer', 'null'] } },
      $defs: { flag: { type: 'boolean' } },
    };
    for (const ok of ['{}', '{"a":true}', '{"b":null}', '{"a":false,"b":7}'])
      expect(matches(schema, ok)).toBe(true);
    expect(matches(schema, '{,"b":7}')).toBe(false);
  });

  it('refuses what it cannot enforce, naming the keyword path', () => {
    const refused = (schema: object): readonly (string | number)[] => {
      try {
        jsonSchemaRegex(schema);
      } catch (err) {
        if (err instanceof UnsupportedSchemaError) return err.path;
        throw err;
      }
      throw new Error('accepted');
    };
    expect(refused({ type: 'object', properties: { n: { type: 'integer', minimum: 0 } } })).toEqual(
      ['properties', 'n', 'minimum'],
    );
    expect(refused({ type: 'object' })).toEqual([]);
    expect(refused({ type: 'array' })).toEqual(['items']);
    expect(refused({ $ref: '#/$defs/a', $defs: { a: { $ref: '#/$defs/a' } } })).toEqual([
      '$defs',
      'a',
      '$ref',
    ]);
    expect(refused({ type: 'string', format: 'email' })).toEqual(['format']);
    expect(refused({ type: 'number', maxLength: 3 })).toEqual(['maxLength']);
  });

  it('is a ConfigError at option parsing, with the full path and the fix', () => {
    const bad = {
      responseFormat: {
        type: 'json_schema',
        schema: { type: 'object', properties: { n: { type: 'integer', minimum: 0 } } },
      },
    };
    expect(() => parseGenerationOptions(bad, 'pipelines.gen.options')).toThrow(ConfigError);
    expect(() => parseGenerationOptions(bad, 'pipelines.gen.options')).toThrow(
      /responseFormat\.schema\.properties\.n\.minimum/,
    );
    expect(() =>
      parseGenerationOptions({ responseFormat: { type: 'regex', pattern: 'a\\bb' } }),
    ).toThrow(/responseFormat\.pattern.*assertions/);
    expect(() => parseGenerationOptions({ responseFormat: { type: 'grammar' } })).toThrow(
      ConfigError,
    );
  });
});

describe('CharDfa', () => {
  it('matches in full, over code points; a leading ^ and trailing $ are allowed', () => {
    const dfa = CharDfa.compile('^[a-c]+é?[0-9]{2}$');
    expect(dfa.matches('ab12')).toBe(true);
    expect(dfa.matches('cé99')).toBe(true);
    expect(dfa.matches('ab123')).toBe(false);
    expect(dfa.matches('xab12')).toBe(false);
    expect(CharDfa.compile('😀|x').matches('😀')).toBe(true);
  });

  it('refuses assertions, backreferences and an empty language', () => {
    expect(() => CharDfa.compile('a(?=b)')).toThrow(PatternError);
    expect(() => CharDfa.compile('(a+)\\1')).toThrow(/backreferences/);
    expect(() => CharDfa.compile('[]')).toThrow(/matches nothing/);
  });
});

/** The tokens' own decode is the reference: bytes joined as UTF-8 must give the same text. */
async function checkVocabulary(folder: string, random: () => number): Promise<void> {
  const tokenizer = await TextTokenizer.load(folder);
  const vocab = tokenVocabulary(tokenizer.json, folder);
  const ids = vocab.bytes.flatMap((b, id) => (b === undefined ? [] : [id]));
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let compared = 0;
  for (let n = 0; n < 400; n += 1) {
    const seq = Array.from({ length: 6 }, () => ids[Math.floor(random() * ids.length)] as number);
    let text: string;
    try {
      text = decoder.decode(Uint8Array.from(seq.flatMap((id) => [...(vocab.bytes[id] ?? [])])));
    } catch {
      continue; // Invalid UTF-8: masks never allow it.
    }
    for (let s = 0; s < vocab.leadingStrip && text.startsWith(' '); s += 1) text = text.slice(1);
    expect(text).toBe(await tokenizer.decode(seq, true));
    compared += 1;
  }
  expect(compared).toBeGreaterThan(100);
}

describe('tokenVocabulary', () => {
  it('gives each token the bytes its decode adds (sentencepiece-style fixture)', async () => {
    await checkVocabulary(FIXTURE, seededRandom(5));
  });

  it.skipIf(!existsSync(SMOLLM2))(
    'gives each token the bytes its decode adds (SmolLM2 byte-level BPE)',
    async () => {
      await checkVocabulary(SMOLLM2, seededRandom(6));
    },
  );
});

describe('TokenMasks', () => {
  let tokenizer: TextTokenizer;
  let trie: TokenTrie;
  beforeAll(async () => {
    tokenizer = await TextTokenizer.load(FIXTURE);
    trie = new TokenTrie(tokenVocabulary(tokenizer.json, FIXTURE));
  });

  it('allows exactly the tokens that keep the text a prefix of a match', async () => {
    const dfa = formatDfa({ type: 'regex', pattern: '(yes|no) [0-9]{1,3}' });
    const masks = new TokenMasks(dfa, trie);
    const text = async (id: number): Promise<string> => tokenizer.decode([id], true);
    const prefixOk = (t: string): boolean =>
      ['yes ', 'no '].some(
        (w) => w.startsWith(t) || (t.startsWith(w) && /^\d{0,3}$/.test(t.slice(w.length))),
      );
    const mask = masks.maskAt(masks.start);
    let allowed = 0;
    for (let id = 0; id < trie.vocabSize; id += 1) {
      const on = ((mask.bits[id >>> 5] ?? 0) & (1 << (id & 31))) !== 0;
      const bytes = trie.bytes[id];
      // Single byte-fallback tokens of non-ASCII bytes decode to U+FFFD alone: never allowed.
      const expected =
        bytes !== undefined && bytes.every((b) => b < 0x80) && prefixOk(await text(id));
      expect(on, `token ${id} ${JSON.stringify(await text(id))}`).toBe(expected);
      if (on) allowed += 1;
    }
    expect(allowed).toBe(mask.count);
    expect(allowed).toBeGreaterThan(2);
    expect(mask.eos).toBe(false);
  });

  it('walks tokens, forces EOS when complete, and reports the verdict', async () => {
    const format = { type: 'regex' as const, pattern: 'ok' };
    const masks = new TokenMasks(formatDfa(format), trie);
    const [encoded] = await tokenizer.encode(['ok'], {
      truncation: false,
      addSpecialTokens: false,
    });
    const cursor = new FormatCursor({ format, masks }, [2]);
    for (const id of encoded?.ids ?? []) {
      const logits = new Float32Array(trie.vocabSize);
      expect(cursor.restrict(logits)).toBeUndefined();
      expect(logits[id]).toBe(0);
      cursor.advance(id);
    }
    expect(cursor.restrict(new Float32Array(trie.vocabSize))).toBe(2);
    expect(cursor.verdict('ok', 'eos')).toEqual({});
    expect(cursor.verdict('o', 'length').formatError).toMatch(/maxNewTokens/);
    const [other] = await tokenizer.encode(['x'], { truncation: false, addSpecialTokens: false });
    expect(masks.walk(masks.start, other?.ids.at(-1) as number)).toBe(NOWHERE);
  });

  it.skipIf(!existsSync(SMOLLM2))(
    'on a byte-level vocabulary, a multi-byte character split across tokens stays allowed',
    async () => {
      const smol = await TextTokenizer.load(SMOLLM2);
      const smolTrie = new TokenTrie(tokenVocabulary(smol.json, SMOLLM2));
      const format = { type: 'json_schema' as const, schema: { type: 'string', maxLength: 4 } };
      const masks = new TokenMasks(formatDfa(format), smolTrie);
      const [encoded] = await smol.encode(['"日本語"'], {
        truncation: false,
        addSpecialTokens: false,
      });
      let place = masks.start;
      for (const id of encoded?.ids ?? []) {
        const mask = masks.maskAt(place);
        expect(((mask.bits[id >>> 5] ?? 0) & (1 << (id & 31))) !== 0).toBe(true);
        place = masks.walk(place, id);
      }
      expect(masks.complete(place)).toBe(true);
      expect(masks.maskAt(place).count).toBe(0);
    },
  );
});

describe('json_schema outputs validate with ajv', () => {
  it('every string the schema regex matches that ajv sees is valid (sanity of the pairing)', () => {
    const validate = new Ajv().compile(person);
    for (const text of ['{"name":"Ann","age":3}', '{"name":"","age":-1,"tags":["b"],"kind":"x"}'])
      expect(validate(JSON.parse(text) as unknown)).toBe(true);
  });
});
