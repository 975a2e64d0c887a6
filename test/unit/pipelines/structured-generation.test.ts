// Constrained generation on the tiny random-weight LM: whatever the weights prefer, every output
// is JSON its schema accepts (checked by ajv) or matches its regex, greedy and sampled, on the
// single-request pipeline and interleaved in the generative engine, and an output cut short by
// maxNewTokens says so instead of passing for valid.
import { join } from 'node:path';
import Ajv from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import type { GenerationOptions } from '../../../src/pipelines/generation/generation-options.ts';
import { TextGenerationPipeline } from '../../../src/pipelines/generation/text-generation.ts';
import { ModelStore, type LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');

const labelSchema = {
  type: 'object',
  properties: {
    label: { enum: ['spam', 'ham', 'unsure'] },
    confidence: { type: 'number' },
    reason: { type: 'string', maxLength: 10 },
    urgent: { type: 'boolean' },
    topics: { type: 'array', items: { type: 'string', maxLength: 4 }, maxItems: 2 },
  },
  required: ['label', 'urgent'],
};
const personSchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 8 },
    age: { type: ['integer', 'null'] },
  },
  required: ['name', 'age'],
};
const PROMPTS = [
  'Hello there',
  'Label this e-mail: win a prize now',
  'Summarise: the meeting moved to Tuesday',
  'x',
  'Is this spam? Cheap watches',
  'Tell me about the weather',
  'JSON please',
  'The quick brown fox',
];
const MODES: Record<string, GenerationOptions> = {
  greedy: {},
  sampled: { doSample: true, temperature: 1.3, seed: 7 },
  'top-k': { topK: 20, seed: 8 },
  'top-p': { topP: 0.8, temperature: 0.7, seed: 9 },
};

const ajv = new Ajv();
const validLabel = ajv.compile(labelSchema);
const validPerson = ajv.compile(personSchema);

describe('structured output on the pipeline', () => {
  const store = new ModelStore();
  let model: LoadedModel;
  let gen: TextGenerationPipeline;
  beforeAll(async () => {
    model = await store.load({ path: MODEL });
    gen = new TextGenerationPipeline(model, {
      maxNewTokens: 100,
      responseFormat: { type: 'json_schema', schema: labelSchema },
    });
  });
  afterAll(() => store.close());

  for (const [mode, options] of Object.entries(MODES)) {
    it(`every ${mode} output parses and matches the schema`, async () => {
      for (const prompt of PROMPTS) {
        const result = await gen.generate(prompt, options);
        expect(result.formatError, result.text).toBeUndefined();
        expect(result.finishReason).toBe('eos');
        const parsed = JSON.parse(result.text) as unknown;
        expect(validLabel(parsed), `${result.text} ${ajv.errorsText(validLabel.errors)}`).toBe(
          true,
        );
        expect(result.json).toEqual(parsed);
      }
    });
  }

  it('a regex format holds for every output; unconstrained output does not', async () => {
    const pattern = '[A-Z][a-z]{1,6}-[0-9]{3}';
    for (const [i, prompt] of PROMPTS.entries()) {
      const result = await gen.generate(prompt, {
        responseFormat: { type: 'regex', pattern },
        seed: i,
      });
      expect(result.text).toMatch(new RegExp(`^${pattern}$`, 'u'));
      expect(result.formatError).toBeUndefined();
      expect(result.json).toBeUndefined();
    }
    const free = new TextGenerationPipeline(model, { maxNewTokens: 20 });
    const texts = await free.run(PROMPTS);
    expect(texts.some((r) => !/^[A-Z][a-z]{1,6}-[0-9]{3}$/u.test(r.text))).toBe(true);
    expect(texts.every((r) => r.formatError === undefined && r.json === undefined)).toBe(true);
  });

  it('maxNewTokens reached mid-object: formatError says so', async () => {
    const result = await gen.generate('Hello there', { maxNewTokens: 4 });
    expect(result.finishReason).toBe('length');
    expect(result.formatError).toMatch(/maxNewTokens was reached/);
    expect(result.json).toBeUndefined();
  });

  it('the constraint is what shapes the output: without it the tokens differ', async () => {
    const free = new TextGenerationPipeline(model, { maxNewTokens: 100 });
    const constrained = await gen.generate('Hello there');
    const unconstrained = await free.generate('Hello there');
    expect(unconstrained.tokenIds).not.toEqual(constrained.tokenIds);
  });
});

describe('structured output in the generative engine', () => {
  let engine: GenerativeEngine;
  const store = new ModelStore();
  let gen: TextGenerationPipeline;
  beforeAll(async () => {
    engine = await GenerativeEngine.start({
      model: { path: MODEL },
      generation: { maxNewTokens: 100 },
      scheduler: { maxActive: 6, stepTokens: 32, maxKvTokens: 1200 },
      intraOpThreads: 1,
    });
    gen = new TextGenerationPipeline(await store.load({ path: MODEL }), { maxNewTokens: 100 });
  });
  afterAll(async () => {
    await engine.close('abort');
    await store.close();
  });

  it('interleaved requests with different schemas each get their own, token for token as alone', async () => {
    const requests = PROMPTS.flatMap((prompt, i) => {
      const format =
        i % 3 === 0
          ? { type: 'json_schema' as const, schema: labelSchema }
          : i % 3 === 1
            ? { type: 'json_schema' as const, schema: personSchema }
            : undefined;
      const sampling = i % 2 === 0 ? {} : { temperature: 1.2, seed: i };
      const generation: GenerationOptions = {
        ...sampling,
        ...(format !== undefined ? { responseFormat: format } : { maxNewTokens: 30 }),
      };
      return [{ prompt, generation, schema: i % 3 }];
    });
    const results = await Promise.all(
      requests.map((r) => engine.submit(r.prompt, { generation: r.generation }).result),
    );
    for (const [i, result] of results.entries()) {
      const request = requests[i] as (typeof requests)[number];
      const alone = await gen.generate(request.prompt, request.generation);
      expect(result.tokenIds).toEqual(alone.tokenIds);
      if (request.schema === 2) {
        expect(result.json).toBeUndefined();
        continue;
      }
      expect(result.formatError, result.text).toBeUndefined();
      const validate = request.schema === 0 ? validLabel : validPerson;
      expect(validate(JSON.parse(result.text) as unknown), result.text).toBe(true);
    }
  });
});
