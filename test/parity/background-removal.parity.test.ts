import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BackgroundRemovalPipeline,
  foregroundMap,
  type BackgroundRemovalResult,
} from '../../src/pipelines/vision/background-removal.ts';
import type { FloatOutput } from '../../src/pipelines/runtime/tensors.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { differingPixels, goldenPixels, pngPixels, type GoldenImage } from './mask-pixels.ts';
import { asBatch, forPipeline, GOLDEN } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'segformer-background-removal';
const load = useModelStore();
const goldens = readGoldens(MODEL);
const raw = (
  goldens as unknown as {
    raw: { inputs: { images: string[] }; outputs: { logits: number[][][][] } }[];
  }
).raw[0];

interface GoldenResult {
  image: GoldenImage;
  mask: GoldenImage;
}

// An alpha value may differ from Python's only where map * 255 sits within float noise of a whole
// number, where truncation to 8 bits tips either way; at most 0.1 % of an image's pixels.
const NEAR_INTEGER = 1e-3;
const MAX_TIED_SHARE = 0.001;

function nearInteger(map: Float32Array, pixel: number): boolean {
  const scaled = (map[pixel] as number) * 255;
  return Math.abs(scaled - Math.round(scaled)) < NEAR_INTEGER;
}

describe('backgroundRemoval', forPipeline('backgroundRemoval'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      it(`${golden.name} (${golden.task})`, GOLDEN, async ({ task }) => {
        const minMax = (golden.call.options as { min_max?: boolean }).min_max ?? true;
        const pipeline = new BackgroundRemovalPipeline(await load(MODEL), {
          minMax,
          returnMask: true,
          returnTensor: true,
        });
        const names = asBatch(golden.call.inputs) as string[];
        const results = await pipeline.run(names.map((p) => join(modelPath(MODEL), p)));
        const expected = asBatch(golden.output) as GoldenResult[];
        let maxAbsDiff = 0;
        for (const [i, result] of results.entries()) {
          const want = expected[i] as GoldenResult;
          const logits = result.logits as FloatOutput;
          const wantMask = goldenPixels(want.mask);
          const map = foregroundMap(logits, wantMask.height, wantMask.width, 'sigmoid', minMax);
          const tied = new Set<number>();
          for (const [got, golden] of [
            [result.mask, wantMask],
            [result.image, goldenPixels(want.image)],
          ] as const) {
            for (const p of differingPixels(await pngPixels(got as Uint8Array), golden)) {
              expect(nearInteger(map, p), `pixel ${p} is not on a truncation boundary`).toBe(true);
              tied.add(p);
            }
          }
          expect(tied.size / (wantMask.width * wantMask.height)).toBeLessThanOrEqual(
            MAX_TIED_SHARE,
          );
          const index = raw?.inputs.images.indexOf(names[i] as string) ?? -1;
          const comparison = compareDeep(logits.data, raw?.outputs.logits[index]?.flat(2));
          expect(comparison.differences).toEqual([]);
          maxAbsDiff = Math.max(maxAbsDiff, comparison.maxAbsDiff);
        }
        task.meta.maxAbsDiff = maxAbsDiff;
      });
    }
  });

  it('gives the same cut-out for an image alone and inside a batch', async () => {
    const pipeline = new BackgroundRemovalPipeline(await load(MODEL), { returnMask: true });
    const paths = ['gradient_48x40_rgb.png', 'shapes_64x64_rgb.png', 'alpha_32x32_rgba.png'].map(
      (name) => join(modelPath(MODEL), 'images', name),
    );
    const alone = await Promise.all(paths.map(async (p) => (await pipeline.run([p]))[0]));
    const together = await pipeline.run([paths[2] as string, ...paths]);
    expect(together.slice(1)).toEqual(alone);
    expect(together[0]).toEqual(alone[2]);
  });

  it('returns an RGBA PNG of the input size that keeps the RGB pixels, and only that by default', async () => {
    const pipeline = new BackgroundRemovalPipeline(await load(MODEL));
    const path = join(modelPath(MODEL), 'images/shapes_64x64_rgb.png');
    const [result] = (await pipeline.run([path])) as [BackgroundRemovalResult];
    expect(Object.keys(result)).toEqual(['image']);
    const cut = await pngPixels(result.image);
    expect([cut.width, cut.height, cut.channels]).toEqual([64, 64, 4]);
    const source = await pngPixels(new Uint8Array(await readFile(path)));
    for (let p = 0; p < 64 * 64; p += 1)
      for (let c = 0; c < 3; c += 1)
        expect(cut.data[p * 4 + c]).toBe(source.data[p * source.channels + c]);
    const alpha = Array.from({ length: 64 * 64 }, (_, p) => cut.data[p * 4 + 3] as number);
    // min-max stretch: the least foreground pixel is transparent, the most opaque.
    expect(Math.min(...alpha)).toBe(0);
    expect(Math.max(...alpha)).toBe(255);
  });

  it('refuses unknown options, naming them', async () => {
    const model = await load(MODEL);
    expect(
      () =>
        new BackgroundRemovalPipeline(model, {
          threshold: 0.5,
        } as unknown as BackgroundRemovalOptionsLike),
    ).toThrow(/threshold/);
    expect(
      () =>
        new BackgroundRemovalPipeline(model, {
          activation: 'softmax',
        } as unknown as BackgroundRemovalOptionsLike),
    ).toThrow(/activation/);
  });
});

type BackgroundRemovalOptionsLike = ConstructorParameters<typeof BackgroundRemovalPipeline>[1];
