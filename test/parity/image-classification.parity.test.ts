import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import { ImageClassificationPipeline } from '../../src/pipelines/vision/image-classification.ts';
import {
  compilePreprocessor,
  preprocessImage,
} from '../../src/pipelines/vision/image-preprocess.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'vit-image-classification';
const load = useModelStore();
const goldens = readGoldens(MODEL);
const preprocessing = (
  goldens as unknown as { preprocessing: { image: string; pixel_values: number[][][] }[] }
).preprocessing;

describe('imageClassification', forPipeline('imageClassification'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const { top_k: topK, function_to_apply: functionToApply } = call.options as {
          top_k?: number;
          function_to_apply?: 'softmax' | 'sigmoid' | 'none';
        };
        const pipeline = new ImageClassificationPipeline(await load(MODEL), {
          ...(topK !== undefined ? { topK } : {}),
          ...(functionToApply !== undefined ? { functionToApply } : {}),
        });
        // The goldens name images relative to the model folder, as committed PNG files.
        const paths = asBatch(call.inputs).map((p) => join(modelPath(MODEL), p as string));
        return unbatch(call.inputs, await pipeline.run(paths));
      });
    }
  });

  describe('pixel values equal the Python image processor', GOLDEN, () => {
    for (const golden of preprocessing) {
      it(golden.image, async ({ task }) => {
        const model = await load(MODEL);
        const image = await decodeImage(join(modelPath(MODEL), golden.image), 'image');
        const pixels = preprocessImage(
          image,
          compilePreprocessor(model.preprocessor, model.folder),
        );
        const comparison = compareDeep(Array.from(pixels.data), golden.pixel_values.flat(2), 1e-6);
        task.meta.maxAbsDiff = comparison.maxAbsDiff;
        expect(comparison.differences).toEqual([]);
      });
    }
  });

  it('takes encoded bytes and raw pixels like a path', async () => {
    const pipeline = new ImageClassificationPipeline(await load(MODEL), { topK: null });
    const path = join(modelPath(MODEL), 'images/shapes_64x64_rgb.png');
    const bytes = await readFile(path);
    const raw = await decodeImage(path, 'image');
    const [a, b, c] = await pipeline.run([path, new Uint8Array(bytes), raw]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    expect(a).toHaveLength(5);
  });

  it('rejects unreadable images and bad inputs naming the field', async () => {
    const pipeline = new ImageClassificationPipeline(await load(MODEL));
    await expect(pipeline.run([])).rejects.toMatchObject({ name: 'InputError', field: 'inputs' });
    await expect(pipeline.run([new Uint8Array([1, 2, 3])])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[0]',
    });
    await expect(
      pipeline.run([{ data: new Uint8Array(5), width: 2, height: 2 }]),
    ).rejects.toMatchObject({ name: 'InputError', field: 'inputs[0]' });
    await expect(pipeline.run([42 as unknown as string])).rejects.toMatchObject({
      field: 'inputs[0]',
    });
  });
});
