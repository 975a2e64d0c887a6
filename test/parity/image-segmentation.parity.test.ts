import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { axisTaps, sampleAt } from '../../src/pipelines/vision/bilinear-upsample.ts';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  ImageSegmentationPipeline,
  type ImageSegmentationOptions,
  type Segment,
  type SegmentationWithTensor,
} from '../../src/pipelines/vision/image-segmentation.ts';
import type { FloatOutput } from '../../src/pipelines/runtime/tensors.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { differingPixels, goldenPixels, pngPixels, type GoldenImage } from './mask-pixels.ts';
import { asBatch, forPipeline, GOLDEN } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'segformer-semantic-segmentation';
const load = useModelStore();
const goldens = readGoldens(MODEL);
const raw = (
  goldens as unknown as {
    raw: { inputs: { images: string[] }; outputs: { logits: number[][][][] } }[];
  }
).raw[0];

interface GoldenSegment {
  label: string;
  score: null;
  mask: GoldenImage;
}

// A pixel may take another class than Python's only where its two best upsampled logits tie
// within float noise (ONNX Runtime vs torch, ~1e-7 here): there the argmax is a coin toss.
const TIE = 1e-5;
const MAX_TIED_SHARE = 0.001;

function margin(logits: FloatOutput, height: number, width: number, pixel: number): number {
  const [classes = 0, inHeight = 0, inWidth = 0] = logits.dims;
  const rows = axisTaps(inHeight, height);
  const cols = axisTaps(inWidth, width);
  const y = Math.floor(pixel / width);
  const values = Array.from({ length: classes }, (_, c) =>
    sampleAt(
      logits.data.subarray(c * inHeight * inWidth, (c + 1) * inHeight * inWidth),
      inWidth,
      rows,
      cols,
      y,
      pixel % width,
    ),
  ).sort((a, b) => b - a);
  return (values[0] ?? 0) - (values[1] ?? 0);
}

async function compareSegments(
  actual: SegmentationWithTensor,
  expected: GoldenSegment[],
): Promise<{ tied: number; pixels: number }> {
  expect(actual.segments.map((s) => [s.label, s.score])).toEqual(
    expected.map((s) => [s.label, s.score]),
  );
  let tied = 0;
  let pixels = 0;
  for (const [i, segment] of actual.segments.entries()) {
    const want = goldenPixels((expected[i] as GoldenSegment).mask);
    const got = await pngPixels(segment.mask);
    pixels = want.width * want.height;
    for (const p of differingPixels(got, want)) {
      expect(margin(actual.logits, want.height, want.width, p), `pixel ${p}`).toBeLessThan(TIE);
      tied += 1;
    }
  }
  return { tied, pixels };
}

describe('imageSegmentation', forPipeline('imageSegmentation'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      it(`${golden.name} (${golden.task})`, GOLDEN, async ({ task }) => {
        const pipeline = new ImageSegmentationPipeline(await load(MODEL), {
          subtask: 'semantic',
          returnTensor: true,
        });
        const names = asBatch(golden.call.inputs) as string[];
        const results = (await pipeline.run(
          names.map((p) => join(modelPath(MODEL), p)),
        )) as SegmentationWithTensor[];
        const expected = (
          Array.isArray(golden.call.inputs) ? golden.output : [golden.output]
        ) as GoldenSegment[][];
        let maxAbsDiff = 0;
        for (const [i, result] of results.entries()) {
          const { tied, pixels } = await compareSegments(result, expected[i] as GoldenSegment[]);
          expect(tied / pixels).toBeLessThanOrEqual(MAX_TIED_SHARE);
          // The image's logits against torch's for the same image (the goldens' raw batch).
          const index = raw?.inputs.images.indexOf(names[i] as string) ?? -1;
          const comparison = compareDeep(result.logits.data, raw?.outputs.logits[index]?.flat(2));
          expect(comparison.differences).toEqual([]);
          maxAbsDiff = Math.max(maxAbsDiff, comparison.maxAbsDiff);
        }
        task.meta.maxAbsDiff = maxAbsDiff;
      });
    }
  });

  it('gives the same masks for an image alone and inside a batch', async () => {
    const pipeline = new ImageSegmentationPipeline(await load(MODEL));
    const paths = ['gradient_48x40_rgb.png', 'shapes_64x64_rgb.png', 'noise_24x20_gray.png'].map(
      (name) => join(modelPath(MODEL), 'images', name),
    );
    const alone = await Promise.all(paths.map(async (p) => (await pipeline.run([p]))[0]));
    const together = await pipeline.run([paths[1] as string, ...paths]);
    expect(together.slice(1)).toEqual(alone);
    expect(together[0]).toEqual(alone[1]);
  });

  it('takes encoded bytes and raw pixels like a path, and returns 8-bit grey PNG masks', async () => {
    const pipeline = new ImageSegmentationPipeline(await load(MODEL));
    const path = join(modelPath(MODEL), 'images/shapes_64x64_rgb.png');
    const [a, b, c] = (await pipeline.run([
      path,
      new Uint8Array(await readFile(path)),
      await decodeImage(path, 'image'),
    ])) as Segment[][];
    expect(b).toEqual(a);
    expect(c).toEqual(a);
    const mask = await pngPixels((a?.[0] as Segment).mask);
    expect([mask.width, mask.height, mask.channels]).toEqual([64, 64, 1]);
    expect(new Set(mask.data)).toEqual(new Set([0, 255]));
  });

  it('refuses options it does not know and subtasks it cannot do, naming the field', async () => {
    const model = await load(MODEL);
    expect(
      () => new ImageSegmentationPipeline(model, { subtask: 'panoptic' as 'semantic' }),
    ).toThrow(/subtask/);
    expect(
      () =>
        new ImageSegmentationPipeline(model, {
          threshold: 0.5,
        } as unknown as ImageSegmentationOptions),
    ).toThrow(/threshold/);
    const pipeline = new ImageSegmentationPipeline(model);
    await expect(pipeline.run([new Uint8Array([1, 2, 3])])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[0]',
    });
  });
});
