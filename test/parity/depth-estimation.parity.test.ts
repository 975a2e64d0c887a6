import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  DepthEstimationPipeline,
  type DepthResult,
} from '../../src/pipelines/vision/depth-estimation.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { float32FromBase64, pixelValueCases, type ProcessorGoldens } from './image-goldens.ts';
import { asBatch, forPipeline, GOLDEN } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPython } from './python-output.ts';

const MODEL = 'glpn-depth-estimation';
const load = useModelStore();
const goldens = readGoldens(MODEL) as ReturnType<typeof readGoldens> & {
  too_small: string[];
  dpt_processor: ProcessorGoldens;
};

interface DepthGolden {
  predicted_depth: { shape: [number, number]; f32le_base64: string };
  depth: { mode: string; size: [number, number]; u8_base64: string };
}

/** The PNG's pixels, decoded, and the channels the file itself holds (1: greyscale, as PIL's L). */
async function pngPixels(
  png: Uint8Array,
): Promise<{ data: Uint8Array; width: number; height: number; channels: number | undefined }> {
  const { channels } = await sharp(png).metadata();
  const { data, info } = await sharp(png)
    .toColourspace('b-w')
    .raw()
    .toBuffer({ resolveWithObject: true });
  expect(info.channels).toBe(1);
  return { data: new Uint8Array(data), width: info.width, height: info.height, channels };
}

/**
 * Depth to 1e-4; depth-image pixels equal except where our depth, within ~1e-6 of torch's, falls
 * on the other side of an 8-bit step (counted, at most 0.1 % of pixels and one level).
 */
async function compareDepth(
  actual: DepthResult,
  expected: DepthGolden,
): Promise<{ maxAbsDiff: number; differences: string[]; flipped: number }> {
  const [height, width] = expected.predicted_depth.shape;
  // Through the route's Python shape: the same keys as Python's, the map as rows of floats.
  const shaped = asPython('depthEstimation', actual) as {
    predicted_depth?: Float32Array[];
    depth: Uint8Array;
  };
  expect(Object.keys(shaped).sort()).toEqual(Object.keys(expected).sort());
  const rows = shaped.predicted_depth;
  const differences: string[] = [];
  if (rows === undefined)
    return { maxAbsDiff: Infinity, differences: ['no predicted_depth'], flipped: 0 };
  expect([rows.length, rows[0]?.length]).toEqual([height, width]);
  const depth = compareDeep(
    rows.flatMap((r) => Array.from(r)),
    Array.from(float32FromBase64(expected.predicted_depth.f32le_base64)),
    1e-4,
  );
  differences.push(...depth.differences);
  const png = await pngPixels(shaped.depth);
  expect([png.width, png.height, png.channels]).toEqual([...expected.depth.size, 1]);
  expect(expected.depth.mode).toBe('L');
  const want = Buffer.from(expected.depth.u8_base64, 'base64');
  let flipped = 0;
  png.data.forEach((v, i) => {
    const diff = Math.abs(v - (want[i] ?? -1));
    if (diff > 1) differences.push(`depth pixel ${i}: ${v} vs expected ${want[i]}`);
    if (diff !== 0) flipped += 1;
  });
  if (flipped > png.data.length / 1000)
    differences.push(`${flipped} of ${png.data.length} depth pixels differ`);
  return { maxAbsDiff: depth.maxAbsDiff, differences, flipped };
}

function depthCase(golden: GoldenCase): void {
  it(`${golden.name} (${golden.task})`, GOLDEN, async ({ task }) => {
    const pipeline = new DepthEstimationPipeline(await load(MODEL), { predictedDepth: true });
    const inputs = asBatch(golden.call.inputs);
    const results = await pipeline.run(inputs.map((p) => join(modelPath(MODEL), p as string)));
    const expected = (
      Array.isArray(golden.call.inputs) ? golden.output : [golden.output]
    ) as DepthGolden[];
    expect(results).toHaveLength(expected.length);
    let worst = 0;
    for (const [i, result] of results.entries()) {
      const comparison = await compareDepth(result, expected[i] as DepthGolden);
      worst = Math.max(worst, comparison.maxAbsDiff);
      expect(comparison.differences, `${inputs[i] as string}`).toEqual([]);
    }
    task.meta.maxAbsDiff = worst;
  });
}

describe('depthEstimation', forPipeline('depthEstimation'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) depthCase(golden);
  });

  describe('pixel values equal the Python image processor', () => {
    describe('GLPN (size_divisor, no normalisation)', () => {
      pixelValueCases(MODEL, load);
    });
    describe('DPT as Depth Anything configures it (keep_aspect_ratio, ensure_multiple_of)', () => {
      pixelValueCases(MODEL, load, goldens.dpt_processor);
    });
  });

  const paths = goldens.pipeline
    .filter((g) => !Array.isArray(g.call.inputs))
    .map((g) => join(modelPath(MODEL), g.call.inputs as string));

  it('gives each image its own result in a batch of different sizes, in any order', async () => {
    const pipeline = new DepthEstimationPipeline(await load(MODEL), { predictedDepth: true });
    const alone: DepthResult[] = [];
    for (const path of paths) alone.push(...(await pipeline.run([path])));
    expect(await pipeline.run(paths)).toEqual(alone);
    expect(await pipeline.run([...paths].reverse())).toEqual([...alone].reverse());
  });

  it('returns the PNG only unless predictedDepth is asked for; bytes and raw pixels as a path', async () => {
    const pipeline = new DepthEstimationPipeline(await load(MODEL));
    const path = paths[0] as string;
    const raw = await decodeImage(path, 'image');
    const [a, b, c] = await pipeline.run([path, new Uint8Array(await readFile(path)), raw]);
    expect(Object.keys(a ?? {})).toEqual(['depth']);
    expect(b).toEqual(a);
    expect(c).toEqual(a);
  });

  it('refuses images smaller than size_divisor, other models and unknown options', async () => {
    const model = await load(MODEL);
    const pipeline = new DepthEstimationPipeline(model);
    expect(goldens.too_small.length).toBeGreaterThan(0);
    for (const small of goldens.too_small)
      await expect(pipeline.run([join(modelPath(MODEL), small)])).rejects.toMatchObject({
        name: 'InputError',
      });
    expect(() => new DepthEstimationPipeline(model, { returnTensors: true } as object)).toThrow(
      /returnTensors/,
    );
    const classifier = await load('vit-image-classification');
    expect(() => new DepthEstimationPipeline(classifier)).toThrow(/predicted_depth/);
  });
});
