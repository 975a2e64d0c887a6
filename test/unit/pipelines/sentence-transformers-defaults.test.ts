// featureExtraction takes its defaults from a sentence-transformers model folder's own files
// (sentence_bert_config.json, the Pooling module's config.json, modules.json), and explicit
// options still win. The folders here are the small BERT fixture with fake sentence-transformers
// files written beside it; each default is checked against the same model run with the
// equivalent explicit option on a plain copy of the folder.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { costOptions } from '../../../src/engine/batch-engine.ts';
import { inputCost } from '../../../src/engine/input-cost.ts';
import { ModelFolderError } from '../../../src/errors.ts';
import {
  FeatureExtractionPipeline,
  type FeatureExtractionOptions,
} from '../../../src/pipelines/text/feature-extraction.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { readSentenceTransformersConfig } from '../../../src/pipelines/runtime/sentence-transformers-config.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const FIXTURE = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'bert-feature-extraction',
);
const FILES = ['config.json', 'model.onnx', 'tokenizer_config.json', 'special_tokens_map.json'];
// Longer than the fixture tokenizer's 64-token limit, so every truncation length below matters.
const LONG = Array.from({ length: 40 }, (_, i) => `word${i} the meeting moved again`).join(' ');
const SHORT = 'Hello World, the meeting is moved';

const scratch = mkdtemp(join(tmpdir(), 'st-defaults-'));
const store = new ModelStore();
let folders = 0;

afterAll(async () => {
  await store.close();
  await rm(await scratch, { recursive: true, force: true });
});

/**
 * A copy of the fixture with `extra` files (relative path -> JSON). The copy's tokenizer keeps
 * case (the fixture's lower-cases), so that do_lower_case has something to do.
 */
async function folderWith(extra: Record<string, unknown> = {}): Promise<string> {
  folders += 1;
  const dir = join(await scratch, `model-${folders}`);
  await mkdir(dir, { recursive: true });
  for (const file of FILES) await copyFile(join(FIXTURE, file), join(dir, file));
  const tokenizer = JSON.parse(await readFile(join(FIXTURE, 'tokenizer.json'), 'utf8')) as {
    normalizer: Record<string, unknown>;
  };
  tokenizer.normalizer['lowercase'] = false;
  await writeFile(join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  for (const [path, content] of Object.entries(extra)) {
    await mkdir(join(dir, path, '..'), { recursive: true });
    await writeFile(
      join(dir, path),
      typeof content === 'string' ? content : JSON.stringify(content),
    );
  }
  return dir;
}

async function embed(
  folder: string,
  inputs: string[],
  options: FeatureExtractionOptions = {},
): Promise<number[][]> {
  const pipeline = new FeatureExtractionPipeline(await store.load({ path: folder }), options);
  const outputs = await pipeline.run(inputs);
  return outputs.map((v) => Array.from(v as Float32Array));
}

const norm = (v: number[]): number => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

const pooling = (modes: Partial<Record<string, boolean>>): Record<string, unknown> => ({
  word_embedding_dimension: 32,
  pooling_mode_cls_token: false,
  pooling_mode_mean_tokens: false,
  pooling_mode_max_tokens: false,
  pooling_mode_mean_sqrt_len_tokens: false,
  ...modes,
});

const MODULES = (...extra: { type: string; path: string }[]) => [
  { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
  { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ...extra.map((m, i) => ({ idx: i + 2, name: String(i + 2), ...m })),
];

describe('sentence-transformers defaults for featureExtraction', () => {
  const plain = folderWith();

  it('reads nothing from a folder without sentence-transformers files', async () => {
    expect(await readSentenceTransformersConfig(await plain)).toBeUndefined();
  });

  it("truncates at sentence_bert_config.json's max_seq_length by default", async () => {
    const st = await folderWith({ 'sentence_bert_config.json': { max_seq_length: 8 } });
    const [byDefault] = await embed(st, [LONG]);
    const [explicit8] = await embed(await plain, [LONG], { maxLength: 8 });
    const [untouched] = await embed(await plain, [LONG]);
    expect(byDefault).toEqual(explicit8);
    expect(byDefault).not.toEqual(untouched);
  });

  it("lower-cases texts first when sentence_bert_config.json's do_lower_case is true", async () => {
    const st = await folderWith({
      'sentence_bert_config.json': { max_seq_length: 64, do_lower_case: true },
    });
    const [upper, lower] = await embed(st, [SHORT.toUpperCase(), SHORT.toLowerCase()]);
    expect(upper).toEqual(lower);
    // The copy's tokenizer keeps case: without the setting the two texts differ.
    const [plainUpper, plainLower] = await embed(await plain, [
      SHORT.toUpperCase(),
      SHORT.toLowerCase(),
    ]);
    expect(plainUpper).not.toEqual(plainLower);
  });

  it('pools as 1_Pooling/config.json says: cls', async () => {
    const st = await folderWith({
      '1_Pooling/config.json': pooling({ pooling_mode_cls_token: true }),
    });
    const byDefault = await embed(st, [SHORT, LONG]);
    expect(byDefault).toEqual(await embed(await plain, [SHORT, LONG], { pooling: 'cls' }));
    expect(byDefault).not.toEqual(await embed(await plain, [SHORT, LONG]));
  });

  it("pools as the newer 'pooling_mode' key says", async () => {
    const st = await folderWith({ '1_Pooling/config.json': { pooling_mode: 'cls' } });
    expect(await embed(st, [SHORT])).toEqual(await embed(await plain, [SHORT], { pooling: 'cls' }));
  });

  it('max-pools over the attended tokens (pooling_mode_max_tokens)', async () => {
    const st = await folderWith({
      '1_Pooling/config.json': pooling({ pooling_mode_max_tokens: true }),
    });
    const pipeline = new FeatureExtractionPipeline(await store.load({ path: await plain }), {
      pooling: 'none',
    });
    // Batched with a longer text, so padding positions exist and must not count.
    const [tokens] = (await pipeline.run([SHORT, LONG])) as Float32Array[][];
    if (tokens === undefined) throw new Error('no token vectors');
    const expected = Array.from(tokens[0] ?? [], (_, h) =>
      Math.max(...tokens.map((t) => t[h] ?? -Infinity)),
    );
    const [byDefault] = await embed(st, [SHORT, LONG]);
    expect(byDefault).toEqual(Array.from(Float32Array.from(expected)));
  });

  it('refuses a pooling mode it cannot follow, naming the file and the supported modes', async () => {
    const st = await folderWith({
      '1_Pooling/config.json': pooling({ pooling_mode_mean_sqrt_len_tokens: true }),
    });
    const model = await store.load({ path: st });
    expect(() => new FeatureExtractionPipeline(model)).toThrow(ModelFolderError);
    expect(() => new FeatureExtractionPipeline(model)).toThrow(
      /1_Pooling\/config\.json asks for pooling mode mean_sqrt_len_tokens.*pooling_mode_mean_tokens \(mean\), pooling_mode_cls_token \(cls\), pooling_mode_max_tokens \(max\)/,
    );
    // An explicit pooling option is the way out.
    expect(await embed(st, [SHORT], { pooling: 'mean' })).toEqual(
      await embed(await plain, [SHORT]),
    );
  });

  it('normalizes by default when modules.json lists a Normalize module', async () => {
    const st = await folderWith({
      'modules.json': MODULES({
        path: '2_Normalize',
        type: 'sentence_transformers.models.Normalize',
      }),
      '1_Pooling/config.json': pooling({ pooling_mode_mean_tokens: true }),
    });
    const byDefault = await embed(st, [SHORT, LONG]);
    expect(byDefault).toEqual(await embed(await plain, [SHORT, LONG], { normalize: true }));
    for (const v of byDefault) expect(norm(v)).toBeCloseTo(1, 5);
    // Without the module the vectors keep their length.
    const without = await folderWith({
      'modules.json': MODULES(),
      '1_Pooling/config.json': pooling({ pooling_mode_mean_tokens: true }),
    });
    const [raw] = await embed(without, [SHORT]);
    expect(norm(raw ?? [])).not.toBeCloseTo(1, 2);
  });

  it("follows modules.json's paths to the Transformer and Pooling configs", async () => {
    const st = await folderWith({
      'modules.json': [
        {
          idx: 0,
          name: '0',
          path: '0_Transformer',
          type: 'sentence_transformers.models.Transformer',
        },
        {
          idx: 1,
          name: '1',
          path: 'pool',
          type: 'sentence_transformers.sentence_transformer.modules.Pooling',
        },
      ],
      '0_Transformer/sentence_bert_config.json': { max_seq_length: 8 },
      'pool/config.json': { pooling_mode: 'cls' },
    });
    const config = await readSentenceTransformersConfig(st);
    expect(config).toMatchObject({ maxSeqLength: 8, pooling: 'cls', normalize: false });
    expect(await embed(st, [LONG])).toEqual(
      await embed(await plain, [LONG], { maxLength: 8, pooling: 'cls' }),
    );
  });

  it('refuses modules it does not run (Dense) unless pooling is set explicitly', async () => {
    const st = await folderWith({
      'modules.json': MODULES({ path: '2_Dense', type: 'sentence_transformers.models.Dense' }),
      '1_Pooling/config.json': pooling({ pooling_mode_mean_tokens: true }),
    });
    const model = await store.load({ path: st });
    expect(() => new FeatureExtractionPipeline(model)).toThrow(
      /modules\.json lists sentence_transformers\.models\.Dense/,
    );
    expect(await embed(st, [SHORT], { pooling: 'mean' })).toEqual(
      await embed(await plain, [SHORT]),
    );
  });

  it('lets explicit options win over every file', async () => {
    const st = await folderWith({
      'modules.json': MODULES({
        path: '2_Normalize',
        type: 'sentence_transformers.models.Normalize',
      }),
      'sentence_bert_config.json': { max_seq_length: 8, do_lower_case: true },
      '1_Pooling/config.json': pooling({ pooling_mode_cls_token: true }),
    });
    const options: FeatureExtractionOptions = {
      maxLength: 20,
      pooling: 'mean',
      normalize: false,
      lowerCase: false,
    };
    const inputs = [SHORT.toUpperCase(), LONG];
    const explicit = await embed(st, inputs, options);
    expect(explicit).toEqual(await embed(await plain, inputs, options));
    expect(explicit).toEqual(await embed(await plain, inputs, { maxLength: 20 }));
    expect(explicit).not.toEqual(await embed(st, inputs));
  });

  it('fails the load with the file named when a file is broken', async () => {
    const broken = await folderWith({ 'sentence_bert_config.json': '{ "max_seq_length": 2' });
    await expect(store.load({ path: broken })).rejects.toThrow(
      /sentence_bert_config\.json is not valid JSON/,
    );
    const negative = await folderWith({ 'sentence_bert_config.json': { max_seq_length: 0 } });
    await expect(readSentenceTransformersConfig(negative)).rejects.toThrow(
      /max_seq_length must be a positive integer/,
    );
  });
});

describe('pricing featureExtraction inputs', () => {
  it("prices a long text at the folder's max_seq_length when the options leave it unset", async () => {
    const folder = join(import.meta.dirname, '..', '..', '..', 'models', 'all-MiniLM-L6-v2-int8');
    const tokenizer = await TextTokenizer.load(folder);
    const long = Array.from({ length: 400 }, (_, i) => `word${i}`).join(' ');
    const price = async (options: Record<string, unknown>) =>
      (
        await inputCost(long, {
          task: 'featureExtraction',
          tokenizer,
          options: await costOptions('featureExtraction', folder, options),
        })
      ).tokens;
    expect(await price({})).toBe(256);
    expect(await price({ maxLength: 100 })).toBe(100);
    // Other tasks keep the tokenizer's limit.
    expect(
      (
        await inputCost(long, {
          task: 'textClassification',
          tokenizer,
          options: await costOptions('textClassification', folder, {}),
        })
      ).tokens,
    ).toBe(512);
  });
});
