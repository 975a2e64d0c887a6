// generation_config.json keys Python's generate() applies: the token bans are read and checked,
// and a key this project does not apply refuses the pipeline when it is registered, naming the key,
// its value, the file and the fix, unless its value is one Python does nothing with.
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { createHugot } from '../../../src/hugot.ts';
import {
  GenerationConfigLayers,
  readTokenBans,
  refuseUnappliedKeys,
  type GenerationContext,
} from '../../../src/pipelines/generation/generation-config-keys.ts';
import { TextGenerationPipeline } from '../../../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { Seq2SeqTextPipeline } from '../../../src/pipelines/seq2seq/seq2seq-text-pipeline.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const FILE = '/models/m/generation_config.json';
const GREEDY: GenerationContext = { task: 'summarization', doSample: false, numBeams: 1 };
const BEAMS: GenerationContext = { ...GREEDY, numBeams: 4 };
const SAMPLING: GenerationContext = { ...GREEDY, doSample: true };

const layers = (values: Record<string, unknown>): GenerationConfigLayers =>
  new GenerationConfigLayers([{ file: FILE, values }]);

function refusal(values: Record<string, unknown>, context = GREEDY, causal = false): ConfigError {
  try {
    refuseUnappliedKeys(layers(values), context, causal);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error(`${JSON.stringify(values)} was not refused`);
}

describe('refuseUnappliedKeys', () => {
  it('names the key, its value, the file and the fix', () => {
    const err = refusal({ exponential_decay_length_penalty: [5, 1.5] });
    expect(err.message).toBe(
      `summarization: ${FILE} sets exponential_decay_length_penalty: [5,1.5], which Python's ` +
        `generate() applies and this pipeline does not; remove exponential_decay_length_penalty ` +
        `from ${FILE} to run without it (the growing EOS bonus is not applied here; minNewTokens ` +
        '/ maxNewTokens bound the length)',
    );
    expect(err).toMatchObject({
      field: 'exponential_decay_length_penalty',
      code: 'CONFIG_INVALID',
    });
  });

  it.each([
    ['sequence_bias', [[[4], -2.0]], GREEDY],
    ['encoder_repetition_penalty', 1.2, GREEDY],
    ['guidance_scale', 1.5, GREEDY],
    ['num_beam_groups', 2, BEAMS],
    ['force_words_ids', [[3]], BEAMS],
    ['penalty_alpha', 0.6, GREEDY],
    ['dola_layers', 'high', GREEDY],
    ['stop_strings', ['###'], GREEDY],
    ['num_return_sequences', 2, GREEDY],
    ['typical_p', 0.9, SAMPLING],
    ['epsilon_cutoff', 3e-4, SAMPLING],
    ['eta_cutoff', 3e-4, SAMPLING],
    ['min_p', 0.05, SAMPLING],
  ])('refuses %s: %j', (key, value, context) => {
    expect(refusal({ [key]: value }, context).field).toBe(key);
  });

  it("accepts Python's no-op values and keys that do nothing in the mode that runs", () => {
    const noOps = {
      num_beam_groups: 1,
      diversity_penalty: 0.0,
      typical_p: 1.0,
      epsilon_cutoff: 0.0,
      eta_cutoff: 0.0,
      encoder_repetition_penalty: 1.0,
      encoder_no_repeat_ngram_size: 0,
      guidance_scale: 1,
      num_return_sequences: 1,
      sequence_bias: {},
      exponential_decay_length_penalty: null,
      stop_strings: [],
      token_healing: false,
      penalty_alpha: 0,
      // Honoured or inert everywhere: forced_decoder_ids is not read by transformers 5's generate().
      renormalize_logits: true,
      remove_invalid_values: true,
      forced_decoder_ids: [[1, 5]],
    };
    for (const context of [GREEDY, BEAMS, SAMPLING])
      expect(() => refuseUnappliedKeys(layers(noOps), context, false)).not.toThrow();
    // Sampling warpers act only when sampling; group beam search only with beams.
    const inert = { typical_p: 0.5, min_p: 0.1, num_beam_groups: 2, diversity_penalty: 0.5 };
    expect(() => refuseUnappliedKeys(layers(inert), GREEDY, false)).not.toThrow();
    expect(() =>
      refuseUnappliedKeys(layers({ penalty_alpha: 0.6 }), SAMPLING, false),
    ).not.toThrow();
  });

  it('refuses num_beams > 1 for a decoder-only model only', () => {
    expect(refusal({ num_beams: 4 }, GREEDY, true).message).toMatch(/never by beam search/);
    expect(() => refuseUnappliedKeys(layers({ num_beams: 4 }), GREEDY, false)).not.toThrow();
    expect(() => refuseUnappliedKeys(layers({ num_beams: 1 }), GREEDY, true)).not.toThrow();
  });

  it('names the layer a value came from', () => {
    const stack = new GenerationConfigLayers([
      { file: 'config.json (task_specific_params.summarization)', values: { typical_p: 0.5 } },
      { file: FILE, values: { typical_p: 1.0, min_p: null } },
    ]);
    expect(() => refuseUnappliedKeys(stack, SAMPLING, false)).toThrow(
      /config.json \(task_specific_params.summarization\) sets typical_p: 0.5/,
    );
  });
});

describe('readTokenBans', () => {
  const eos = new Set([2]);

  it('reads the keys, an option over the file, and drops bad words that are a lone EOS', () => {
    const bans = readTokenBans(
      layers({
        no_repeat_ngram_size: 3,
        encoder_no_repeat_ngram_size: 1,
        bad_words_ids: [[2], [5], [6, 7], [2, 8]],
        suppress_tokens: [9],
        begin_suppress_tokens: [10],
      }),
      { noRepeatNgramSize: 2 },
      eos,
      1,
      'summarization',
    );
    expect(bans).toEqual({
      noRepeatNgramSize: 2,
      encoderNoRepeatNgramSize: 1,
      badWordsIds: [[5], [6, 7], [2, 8]],
      suppressTokens: [9],
      beginSuppressTokens: [10],
      beginSuppressAt: 1,
    });
  });

  it.each([
    ['no_repeat_ngram_size', -1],
    ['no_repeat_ngram_size', 2.5],
    ['encoder_no_repeat_ngram_size', -2],
    ['bad_words_ids', [1, 2]],
    ['bad_words_ids', []],
    ['bad_words_ids', [[]]],
    ['suppress_tokens', 'x'],
    ['begin_suppress_tokens', [-3]],
  ])('refuses %s: %j', (key, value) => {
    expect(() => readTokenBans(layers({ [key]: value }), {}, eos, 0, 'textGeneration')).toThrow(
      new RegExp(`${FILE} sets ${key}`),
    );
  });
});

describe('pipelines refuse an unapplied key when they load', () => {
  const store = new ModelStore();
  const copies: string[] = [];
  afterAll(async () => {
    await store.close();
    await Promise.all(copies.map((d) => rm(d, { recursive: true, force: true })));
  });

  async function copyWith(
    fixture: string,
    file: string,
    change: (json: Record<string, unknown>) => void,
  ): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), `${fixture}-`));
    copies.push(dir);
    await cp(join(FIXTURES, fixture), dir, { recursive: true });
    const json = JSON.parse(await readFile(join(dir, file), 'utf8')) as Record<string, unknown>;
    change(json);
    await writeFile(join(dir, file), JSON.stringify(json));
    return dir;
  }

  it("summarization: a key of config.json's task_specific_params, with its file", async () => {
    const dir = await copyWith('bart-summarization', 'config.json', (json) => {
      json['task_specific_params'] = { summarization: { encoder_repetition_penalty: 1.5 } };
    });
    const pipeline = new Seq2SeqTextPipeline('summarization', await store.load({ path: dir }));
    await expect(pipeline.ready()).rejects.toThrow(
      `${join(dir, 'config.json')} (task_specific_params.summarization) sets encoder_repetition_penalty: 1.5`,
    );
  });

  it('textGeneration: a sampling warper fails only when the pipeline samples', async () => {
    const dir = await copyWith('llama-causal-lm', 'generation_config.json', (json) => {
      json['typical_p'] = 0.9;
    });
    const model = await store.load({ path: dir });
    await expect(new TextGenerationPipeline(model).ready()).resolves.toBeUndefined();
    const sampling = new TextGenerationPipeline(model, { doSample: true });
    await expect(sampling.ready()).rejects.toThrow(
      `textGeneration: ${join(dir, 'generation_config.json')} sets typical_p: 0.9`,
    );
  });

  it('Hugot.registerPipeline fails for such a folder, not the first record', async () => {
    const dir = await copyWith('bart-summarization', 'generation_config.json', (json) => {
      json['num_beam_groups'] = 2;
      json['diversity_penalty'] = 0.5;
    });
    const hugot = createHugot();
    try {
      hugot.registerModel('bart', { path: dir });
      await expect(
        hugot.registerPipeline('sum', { task: 'summarization', model: 'bart' }),
      ).rejects.toThrow(/sets num_beam_groups: 2.*diverse \(group\) beam search/);
      await expect(
        hugot.registerPipeline('greedy', {
          task: 'summarization',
          model: 'bart',
          options: { numBeams: 1 },
        }),
      ).resolves.toBeDefined();
    } finally {
      await hugot.close();
    }
  });
});
