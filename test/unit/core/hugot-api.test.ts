import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ClosedError,
  ConfigError,
  InputError,
  ModelFolderError,
  ProviderUnavailableError,
  UnknownPipelineError,
} from '../../../src/errors.ts';
import { createHugot, type Hugot } from '../../../src/hugot.ts';
import type { LabelScore } from '../../../src/pipelines/text/text-classification.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const CLASSIFIER = join(FIXTURES, 'bert-text-classification');
const EMBEDDER = join(FIXTURES, 'bert-feature-extraction');

let hugot: Hugot;
let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hugot-api-'));
  hugot = createHugot();
  hugot.registerModel('classifier', { path: CLASSIFIER });
  hugot.registerModel('embedder', { path: EMBEDDER });
  await hugot.registerPipeline('classify', {
    task: 'textClassification',
    model: 'classifier',
    options: { topK: null },
  });
  await hugot.registerPipeline('embed', {
    task: 'featureExtraction',
    model: 'embedder',
    options: { normalize: true },
  });
});

afterAll(async () => {
  await hugot.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('library API', () => {
  it('runs a registered pipeline by alias', async () => {
    const [scores] = await hugot.run<LabelScore[]>('classify', [
      'Meeting moved to Thursday at noon.',
    ]);
    expect(scores?.map((s) => s.label).sort()).toEqual(['ham', 'newsletter', 'personal', 'spam']);
    expect(scores?.reduce((sum, s) => sum + s.score, 0)).toBeCloseTo(1, 5);
  });

  it('gives an input the same result alone and inside a mixed-length batch', async () => {
    const texts = [
      'Hi',
      'John Smith from Acme Corp flew to Berlin on Monday with Maria Garcia.',
      'Crème brûlée 🍮 和 寿司 — naïve façade',
      'x '.repeat(200),
      '',
    ];
    const together = await hugot.run<Float32Array>('embed', texts);
    for (const [i, text] of texts.entries()) {
      const [alone] = await hugot.run<Float32Array>('embed', [text]);
      const diff = Math.max(
        ...Array.from(alone ?? [], (v, j) => Math.abs(v - (together[i]?.[j] ?? NaN))),
      );
      expect(diff, `input ${i}`).toBeLessThan(1e-5);
    }
    const classifiedTogether = await hugot.run<LabelScore[]>('classify', texts);
    for (const [i, text] of texts.entries()) {
      const [alone] = await hugot.run<LabelScore[]>('classify', [text]);
      expect(alone?.map((s) => s.label)).toEqual(classifiedTogether[i]?.map((s) => s.label));
      alone?.forEach((s, j) =>
        expect(s.score).toBeCloseTo(classifiedTogether[i]?.[j]?.score ?? NaN, 5),
      );
    }
  });
});

describe('bad input gets a typed error naming the problem', () => {
  it('rejects an unknown pipeline alias, listing the registered ones', async () => {
    await expect(hugot.run('nope', ['x'])).rejects.toThrow(UnknownPipelineError);
    await expect(hugot.run('nope', ['x'])).rejects.toThrow(/'nope'.*classify, embed/);
  });

  it('rejects an empty batch', async () => {
    await expect(hugot.run('classify', [])).rejects.toThrow(InputError);
    await expect(hugot.run('classify', [])).rejects.toThrow(/empty batch/);
  });

  it('rejects inputs of the wrong type, naming the input', async () => {
    await expect(hugot.run('embed', ['ok', 42])).rejects.toThrow(
      /inputs\[1\] must be a string, got number/,
    );
    await expect(hugot.run('classify', [{ text: 3 }])).rejects.toThrow(InputError);
    await expect(hugot.run('embed', 'not an array' as unknown as string[])).rejects.toThrow(
      /array of inputs/,
    );
  });

  it('rejects an unknown task and an unregistered model at registration', async () => {
    await expect(
      hugot.registerPipeline('x', { task: 'summarize', model: 'classifier' }),
    ).rejects.toThrow(ConfigError);
    await expect(
      hugot.registerPipeline('x', { task: 'summarize', model: 'classifier' }),
    ).rejects.toThrow(/tasks: featureExtraction/);
    await expect(
      hugot.registerPipeline('y', { task: 'textClassification', model: 'ghost' }),
    ).rejects.toThrow(/model 'ghost'.*not registered/);
  });

  it('rejects options that are not valid, naming the field', async () => {
    await expect(
      hugot.registerPipeline('bad-topk', {
        task: 'textClassification',
        model: 'classifier',
        options: { topK: 0 },
      }),
    ).rejects.toThrow(/options\.topK/);
    await expect(
      hugot.registerPipeline('bad-key', {
        task: 'featureExtraction',
        model: 'embedder',
        options: { pool: 'mean' },
      }),
    ).rejects.toThrow(ConfigError);
  });

  it('names the missing file of a model folder', async () => {
    for (const missing of ['tokenizer.json', 'config.json', 'model.onnx']) {
      const folder = join(scratch, `without-${missing}`);
      await cp(CLASSIFIER, folder, { recursive: true });
      await rm(join(folder, missing));
      const session = createHugot();
      session.registerModel('m', { path: folder });
      const attempt = session.registerPipeline('p', { task: 'textClassification', model: 'm' });
      // A missing tokenizer is a task-fit ConfigError, found before any weight loads.
      if (missing === 'tokenizer.json')
        await expect(attempt).rejects.toThrow(
          /model 'm' does not fit task textClassification: it has no tokenizer\.json/,
        );
      else await expect(attempt).rejects.toThrow(ModelFolderError);
      await expect(attempt).rejects.toThrow(
        missing === 'model.onnx' ? /no \.onnx file/ : new RegExp(missing.replace('.', '\\.')),
      );
      await session.close();
    }
  });

  it('names the missing model folder and the unknown onnx file', async () => {
    const session = createHugot();
    session.registerModel('gone', { path: join(scratch, 'does-not-exist') });
    session.registerModel('wrong-file', { path: CLASSIFIER, onnxFile: 'model_int8.onnx' });
    await expect(
      session.registerPipeline('a', { task: 'textClassification', model: 'gone' }),
    ).rejects.toThrow(/does not exist/);
    await expect(
      session.registerPipeline('b', { task: 'textClassification', model: 'wrong-file' }),
    ).rejects.toThrow(/no model_int8\.onnx; \.onnx files there: model\.onnx/);
    await session.close();
  });

  it('says what is missing when CUDA is asked for but not installed', async () => {
    const session = createHugot();
    session.registerModel('gpu', {
      path: CLASSIFIER,
      runtime: { executionProviders: [{ name: 'cuda', deviceId: 0 }] },
    });
    await expect(
      session.registerPipeline('p', { task: 'textClassification', model: 'gpu' }),
    ).rejects.toThrow(ProviderUnavailableError);
    await expect(
      session.registerPipeline('p', { task: 'textClassification', model: 'gpu' }),
    ).rejects.toThrow(/libonnxruntime_providers_cuda\.so.*npm run gpu:install/);
    await session.close();
  });

  it('refuses work after close', async () => {
    const session = createHugot();
    await session.close();
    expect(() => session.registerModel('m', { path: CLASSIFIER })).toThrow(ClosedError);
  });
});
