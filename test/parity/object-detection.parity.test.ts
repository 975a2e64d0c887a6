import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  ObjectDetectionPipeline,
  type Detection,
} from '../../src/pipelines/vision/object-detection.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { pixelValueCases, preprocessingGoldens } from './image-goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const load = useModelStore();

describe('objectDetection', forPipeline('objectDetection'), () => {
  // DETR (ResNet backbone, takes a pixel_mask) and YOLOS (a ViT, pixel_values only).
  for (const MODEL of ['detr-object-detection', 'yolos-object-detection'])
    describe(MODEL, () => {
      modelCases(MODEL);
    });

  it('refuses options, models and inputs it cannot use, naming the field', async () => {
    const model = await load('detr-object-detection');
    expect(() => new ObjectDetectionPipeline(model, { threshold: 2 })).toThrow(/threshold/);
    expect(
      () => new ObjectDetectionPipeline(model, { topK: 3 } as unknown as { threshold: number }),
    ).toThrow(/topK/);
    const classifier = await load('vit-image-classification');
    expect(() => new ObjectDetectionPipeline(classifier)).toThrow(/pred_boxes/);
    const pipeline = new ObjectDetectionPipeline(model);
    await expect(pipeline.run([new Uint8Array([1, 2, 3])])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[0]',
    });
  });
});

function modelCases(MODEL: string): void {
  const goldens = readGoldens(MODEL);
  const floatBoxes = (
    goldens as unknown as {
      float_boxes: { image: string; threshold: number; output: Detection[] }[];
    }
  ).float_boxes;
  const imagePaths = preprocessingGoldens(MODEL).map((g) => join(modelPath(MODEL), g.image));

  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const { threshold } = call.options as { threshold?: number };
        const pipeline = new ObjectDetectionPipeline(
          await load(MODEL),
          threshold === undefined ? {} : { threshold },
        );
        // The goldens name images relative to the model folder, as committed PNG files.
        const paths = asBatch(call.inputs).map((p) => join(modelPath(MODEL), p as string));
        return unbatch(call.inputs, await pipeline.run(paths));
      });
    }
  });

  // Python's pipeline truncates boxes to whole pixels; the processor's own float boxes prove the
  // coordinates to 1e-3 px, and the scores to 1e-4.
  describe('unrounded boxes equal the image processor', GOLDEN, () => {
    for (const golden of floatBoxes) {
      it(golden.image, async ({ task }) => {
        const pipeline = new ObjectDetectionPipeline(await load(MODEL), {
          threshold: golden.threshold,
          integerBoxes: false,
        });
        const [actual = []] = await pipeline.run([join(modelPath(MODEL), golden.image)]);
        const labels = compareDeep(
          actual.map(({ score, label }) => ({ score, label })),
          golden.output.map(({ score, label }) => ({ score, label })),
          1e-4,
        );
        const boxes = compareDeep(
          actual.map((d) => d.box),
          golden.output.map((d) => d.box),
          1e-3,
        );
        task.meta.maxAbsDiff = Math.max(labels.maxAbsDiff, boxes.maxAbsDiff);
        expect(golden.output.length).toBeGreaterThan(0);
        expect([...labels.differences, ...boxes.differences]).toEqual([]);
      });
    }
  });

  describe('pixel values equal the Python image processor', () => {
    pixelValueCases(MODEL, load);
  });

  it('gives each image its own result in a batch of different sizes, in any order', async () => {
    const pipeline = new ObjectDetectionPipeline(await load(MODEL), {
      threshold: 0.2,
      integerBoxes: false,
    });
    const alone: Detection[][] = [];
    for (const path of imagePaths) alone.push(...(await pipeline.run([path])));
    const reversed = [...imagePaths].reverse();
    // Same-size images share a run (two pairs here); every result must equal the one alone.
    expect(await pipeline.run(imagePaths)).toEqual(alone);
    expect(await pipeline.run(reversed)).toEqual([...alone].reverse());
    expect(await pipeline.run([...imagePaths, ...imagePaths])).toEqual([...alone, ...alone]);
  });

  it('takes encoded bytes and raw pixels like a path', async () => {
    const pipeline = new ObjectDetectionPipeline(await load(MODEL), { threshold: 0.2 });
    const path = join(modelPath(MODEL), 'images/stripes_100x40_rgb.png');
    const raw = await decodeImage(path, 'image');
    const [a, b, c] = await pipeline.run([path, new Uint8Array(await readFile(path)), raw]);
    expect(a?.length).toBeGreaterThan(0);
    // Boxes past the top edge truncate to 0, never -0 (which JSON and toEqual tell apart).
    for (const { box } of a ?? [])
      for (const v of Object.values(box)) expect(Object.is(v, -0)).toBe(false);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });
}
