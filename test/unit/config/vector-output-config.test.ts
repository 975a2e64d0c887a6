// output.vectors is judged once, at load: its fields, the route's task, and (with the model folder
// at hand) dimensions against the size the model's config.json gives its vectors.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfigFile, parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { findTask } from '../../../src/pipelines/registry.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const VIT = join(ROOT, 'test', 'fixtures', 'models', 'vit-image-features');

function config(task: string, vectors: string, model = MODEL): string {
  return `
models:
  m: { path: ${model} }
pipelines:
  p: { task: ${task}, model: m }
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
    output: { field: embedding, vectors: ${vectors} }
    sink: { type: file, path: out.jsonl }
`;
}

function refusal(run: () => unknown): ConfigError {
  return thrownBy(ConfigError, run);
}

describe('output.vectors in the config', () => {
  it('defaults the encoding to json and keeps every value unless dimensions is set', () => {
    const parsed = parseConfigText(config('featureExtraction', '{}'), {});
    expect(parsed.routes[0]?.output.vectors).toEqual({ encoding: 'json' });
  });

  it('refuses dimensions under 1 and an unknown encoding, naming the field', () => {
    const zero = refusal(() =>
      parseConfigText(config('featureExtraction', '{ dimensions: 0 }'), {}),
    );
    expect(zero.field).toBe('routes.0.output.vectors.dimensions');
    expect(zero.message).toContain('N must be 1 or more');
    const unknown = refusal(() =>
      parseConfigText(config('featureExtraction', '{ encoding: fp8 }'), {}),
    );
    expect(unknown.field).toBe('routes.0.output.vectors.encoding');
    expect(unknown.message).toContain('base64-f16');
  });

  it('refuses output.vectors on a task that writes no vectors, naming those that do', () => {
    const err = refusal(() =>
      parseConfigText(config('textClassification', '{ encoding: int8 }'), {}),
    );
    expect(err.field).toBe('routes.0.output.vectors');
    expect(err.message).toContain(
      "pipeline 'p' (textClassification) does not write vectors; output.vectors is for featureExtraction, imageFeatureExtraction",
    );
  });

  describe('against the model folder', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'hugot-vectors-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    const load = async (vectors: string, task = 'featureExtraction', model = MODEL) => {
      const file = join(dir, 'config.yaml');
      await writeFile(file, config(task, vectors, model));
      return loadConfigFile(file, {});
    };

    it("refuses dimensions over the model's hidden size, saying the size and the fix", async () => {
      const err = await load('{ dimensions: 385 }').then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).field).toBe('routes.0.output.vectors.dimensions');
      expect((err as ConfigError).message).toContain(
        "385 is more than the 384 values of model 'm'",
      );
      expect((err as ConfigError).message).toContain('use 384 or fewer');
    });

    it("judges an image embedding route by the vision model's size too", async () => {
      const err = await load('{ dimensions: 33 }', 'imageFeatureExtraction', VIT).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((err as ConfigError).message).toContain("33 is more than the 32 values of model 'm'");
      const loaded = await load('{ dimensions: 32 }', 'imageFeatureExtraction', VIT);
      expect(loaded.routes[0]?.output.vectors?.dimensions).toBe(32);
    });

    it('accepts the whole size and fewer', async () => {
      for (const n of [384, 128]) {
        const loaded = await load(`{ encoding: binary, dimensions: ${n} }`);
        expect(loaded.routes[0]?.output.vectors).toEqual({ encoding: 'binary', dimensions: n });
      }
    });
  });

  it('reads the vector size under the names transformers configs give it', () => {
    const text = findTask('featureExtraction')?.vectorSize;
    const image = findTask('imageFeatureExtraction')?.vectorSize;
    expect(text?.({ hidden_size: 384 }, {})).toBe(384);
    expect(text?.({ d_model: 512 }, {})).toBe(512); // T5
    expect(text?.({ dim: 768 }, {})).toBe(768); // DistilBERT
    expect(text?.({ n_embd: 1024 }, {})).toBe(1024); // GPT-2
    expect(text?.({ hidden_size: 'big' }, {})).toBeUndefined();
    // A named output may be a projection of another width: config.json does not say it.
    expect(text?.({ hidden_size: 384 }, { outputName: 'sentence_embedding' })).toBeUndefined();
    expect(image?.({ vision_config: { hidden_size: 1024 }, projection_dim: 768 }, {})).toBe(1024);
    expect(image?.({ hidden_size: 1024 }, { outputName: 'image_embeds' })).toBeUndefined();
    expect(findTask('textClassification')?.vectorSize).toBeUndefined();
  });
});
