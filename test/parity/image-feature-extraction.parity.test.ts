import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  ImageFeatureExtractionPipeline,
  type ImageFeatures,
} from '../../src/pipelines/vision/image-feature-extraction.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { pixelValueCases, preprocessingGoldens } from './image-goldens.ts';
import { asBatch, forPipeline, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const load = useModelStore();

describe('imageFeatureExtraction', forPipeline('imageFeatureExtraction'), () => {
  // A ViT (exact resize, tanh pooler) and a CLIP vision tower (bicubic shortest-edge resize,
  // centre crop, CLIP's mean/std; pooler_output is the layer-normed CLS token).
  for (const MODEL of ['vit-image-features', 'clip-vision-image-features'])
    describe(MODEL, () => {
      modelCases(MODEL);
    });

  it('refuses a pooling its model output cannot give, and unknown options', async () => {
    const model = await load('vit-image-features');
    const path = join(modelPath('vit-image-features'), 'images/shapes_64x64_rgb.png');
    const wrong = new ImageFeatureExtractionPipeline(model, {
      pooling: 'cls',
      outputName: 'pooler_output',
    });
    await expect(wrong.run([path])).rejects.toThrow(/per-token hidden states/);
    const classifier = await load('vit-image-classification');
    expect(() => new ImageFeatureExtractionPipeline(classifier, { pooling: 'pooled' })).toThrow(
      /pooler_output/,
    );
    expect(
      () => new ImageFeatureExtractionPipeline(model, { pool: true } as unknown as object),
    ).toThrow(/pool/);
  });
});

function modelCases(MODEL: string): void {
  const goldens = readGoldens(MODEL);
  const imagePaths = preprocessingGoldens(MODEL).map((g) => join(modelPath(MODEL), g.image));

  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const pipeline = new ImageFeatureExtractionPipeline(await load(MODEL), {
          pooling: call.options['pool'] === true ? 'pooled' : 'none',
        });
        const paths = asBatch(call.inputs).map((p) => join(modelPath(MODEL), p as string));
        return unbatch(
          call.inputs,
          (await pipeline.run(paths)).map((result) => asPython('imageFeatureExtraction', result)),
        );
      });
    }
  });

  describe('pixel values equal the Python image processor', () => {
    pixelValueCases(MODEL, load);
  });

  it("pools 'cls' and 'mean' from Python's token states, and normalises", async () => {
    const tokens = goldens.pipeline.find((g) => g.name === 'batch_tokens')?.output as
      number[][][][] | undefined;
    expect(tokens).toHaveLength(imagePaths.length);
    const model = await load(MODEL);
    const cls = await new ImageFeatureExtractionPipeline(model, { pooling: 'cls' }).run(imagePaths);
    const mean = await new ImageFeatureExtractionPipeline(model, { pooling: 'mean' }).run(
      imagePaths,
    );
    const unit = await new ImageFeatureExtractionPipeline(model, {
      pooling: 'cls',
      normalize: true,
    }).run(imagePaths);
    tokens?.forEach(([states = []], i) => {
      const width = states[0]?.length ?? 0;
      const expectedMean = Array.from(
        { length: width },
        (_, d) => states.reduce((sum, row) => sum + (row[d] ?? 0), 0) / states.length,
      );
      expect(compareDeep(cls[i], states[0], 1e-4).differences).toEqual([]);
      expect(compareDeep(mean[i], expectedMean, 1e-4).differences).toEqual([]);
      const norm = Math.hypot(...(cls[i] as Float32Array));
      const scaled = Array.from(cls[i] as Float32Array, (v) => v / norm);
      expect(compareDeep(unit[i], scaled, 1e-6).differences).toEqual([]);
    });
  });

  it('gives each image its own result alone and in a batch, in any order', async () => {
    const pipeline = new ImageFeatureExtractionPipeline(await load(MODEL), { pooling: 'none' });
    const alone: ImageFeatures[] = [];
    for (const path of imagePaths) alone.push(...(await pipeline.run([path])));
    const reversed = [...imagePaths].reverse();
    expect(compareDeep(await pipeline.run(imagePaths), alone, 1e-6).differences).toEqual([]);
    expect(
      compareDeep(await pipeline.run(reversed), [...alone].reverse(), 1e-6).differences,
    ).toEqual([]);
  });

  it('takes encoded bytes and raw pixels like a path', async () => {
    const pipeline = new ImageFeatureExtractionPipeline(await load(MODEL), { pooling: 'pooled' });
    const path = imagePaths[0] as string;
    const raw = await decodeImage(path, 'image');
    const [a, b, c] = await pipeline.run([path, new Uint8Array(await readFile(path)), raw]);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });
}
