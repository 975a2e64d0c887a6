import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { LoadedModel } from '../../src/pipelines/runtime/model-store.ts';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  compilePreprocessor,
  preprocessImage,
} from '../../src/pipelines/vision/image-preprocess.ts';
import {
  ZeroShotImageClassificationPipeline,
  type ZeroShotImageClassificationOptions,
} from '../../src/pipelines/vision/zero-shot-image-classification.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'clip-zero-shot-image-classification';
const SPLIT = 'clip-split-towers';
const load = useModelStore();
const loaded = new Map<string, LoadedModel>();
beforeAll(async () => {
  for (const name of [MODEL, SPLIT]) loaded.set(name, await load(name));
});
/** A model beforeAll loaded, for synchronous constructor checks. */
const loadedModel = (name: string): LoadedModel => loaded.get(name) as LoadedModel;
const goldens = readGoldens(MODEL);
const preprocessing = (
  goldens as unknown as { preprocessing: { image: string; pixel_values: number[][][] }[] }
).preprocessing;
const path = (name: string): string => join(modelPath(MODEL), 'images', name);

describe('zeroShotImageClassification', forPipeline('zeroShotImageClassification'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const { candidate_labels: candidateLabels, hypothesis_template: hypothesisTemplate } =
          call.options as { candidate_labels: string[]; hypothesis_template?: string };
        const pipeline = new ZeroShotImageClassificationPipeline(await load(MODEL), {
          candidateLabels,
          ...(hypothesisTemplate !== undefined ? { hypothesisTemplate } : {}),
        });
        const paths = asBatch(call.inputs).map((p) => join(modelPath(MODEL), p as string));
        return unbatch(call.inputs, await pipeline.run(paths));
      });
    }
  });

  describe(
    'pixel values equal the Python image processor (shortest edge, centre crop, bicubic)',
    GOLDEN,
    () => {
      for (const golden of preprocessing) {
        it(golden.image, async ({ task }) => {
          const model = await load(MODEL);
          const image = await decodeImage(join(modelPath(MODEL), golden.image), 'image');
          const pixels = preprocessImage(
            image,
            compilePreprocessor(model.preprocessor, model.folder),
          );
          const comparison = compareDeep(
            Array.from(pixels.data),
            golden.pixel_values.flat(2),
            1e-6,
          );
          task.meta.maxAbsDiff = comparison.maxAbsDiff;
          expect(comparison.differences).toEqual([]);
        });
      }
    },
  );

  // The same weights exported as text_model.onnx + vision_model.onnx: one model, two sessions.
  describe('split towers (text_model.onnx + vision_model.onnx)', () => {
    const split = readGoldens(SPLIT) as unknown as typeof goldens & { logit_scale: number };
    for (const golden of split.pipeline) {
      parityCase(golden, async ({ call }) => {
        const { candidate_labels: candidateLabels, hypothesis_template: hypothesisTemplate } =
          call.options as { candidate_labels: string[]; hypothesis_template?: string };
        const model = await load(SPLIT);
        expect([...model.sessions.keys()]).toEqual(['vision_model', 'text_model']);
        const pipeline = new ZeroShotImageClassificationPipeline(model, {
          candidateLabels,
          logitScale: split.logit_scale,
          ...(hypothesisTemplate !== undefined ? { hypothesisTemplate } : {}),
        });
        const paths = asBatch(call.inputs).map((p) => join(modelPath(SPLIT), p as string));
        return unbatch(call.inputs, await pipeline.run(paths));
      });
    }

    it('needs logitScale there, and refuses it for a single-graph model', () => {
      expect(
        () =>
          new ZeroShotImageClassificationPipeline(loadedModel(SPLIT), { candidateLabels: ['a'] }),
      ).toThrow(/logitScale/);
      expect(
        () =>
          new ZeroShotImageClassificationPipeline(loadedModel(MODEL), {
            candidateLabels: ['a'],
            logitScale: 100,
          }),
      ).toThrow(/logitScale is for models split/);
    });
  });

  it('scores an image the same alone and inside a batch', async () => {
    const pipeline = new ZeroShotImageClassificationPipeline(await load(MODEL), {
      candidateLabels: ['cat', 'a large blue rectangle', 'dog'],
    });
    const paths = ['gradient_48x40_rgb.png', 'shapes_64x64_rgb.png', 'noise_24x20_gray.png'].map(
      path,
    );
    const alone = await Promise.all(paths.map(async (p) => (await pipeline.run([p]))[0]));
    const together = await pipeline.run([paths[2] as string, ...paths]);
    expect(together.slice(1)).toEqual(alone);
    expect(together[0]).toEqual(alone[2]);
  });

  it('takes labels as one comma-separated string, and bytes or raw pixels like a path', async () => {
    const model = await load(MODEL);
    const listed = new ZeroShotImageClassificationPipeline(model, {
      candidateLabels: ['cat', 'dog'],
    });
    const joined = new ZeroShotImageClassificationPipeline(model, {
      candidateLabels: 'cat, dog,',
    });
    const file = path('shapes_64x64_rgb.png');
    const [a] = await listed.run([file]);
    const [b, c] = await joined.run([
      new Uint8Array(await readFile(file)),
      await decodeImage(file, 'image'),
    ]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it('refuses options without labels or a template without {}, naming the field', async () => {
    const model = await load(MODEL);
    const make = (options: unknown) => () =>
      new ZeroShotImageClassificationPipeline(model, options as ZeroShotImageClassificationOptions);
    expect(make({})).toThrow(/candidateLabels/);
    expect(make({ candidateLabels: ' , ' })).toThrow(/at least one label/);
    expect(make({ candidateLabels: ['a'], hypothesisTemplate: 'a photo' })).toThrow(/has no \{\}/);
    expect(make({ candidateLabels: ['a'], topK: 2 })).toThrow(/topK/);
  });

  it('refuses a model that is not two-tower', async () => {
    const vit = await load('vit-image-classification');
    expect(() => new ZeroShotImageClassificationPipeline(vit, { candidateLabels: ['a'] })).toThrow(
      /tokenizer|two-tower/,
    );
  });
});
