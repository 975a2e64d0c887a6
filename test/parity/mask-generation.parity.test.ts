import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MaskGenerationPipeline,
  type MaskGenerationOptions,
  type PromptMasks,
} from '../../src/pipelines/vision/mask-generation.ts';
import {
  coordinateScale,
  promptFeeds,
  type MaskGenerationInput,
} from '../../src/pipelines/vision/sam-prompts.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { differingPixels, goldenPixels, pngPixels } from './mask-pixels.ts';
import { forPipeline, GOLDEN } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'sam-mask-generation';
const load = useModelStore();
const goldens = readGoldens(MODEL);

interface SamCall {
  points?: [number, number][];
  labels?: number[];
  boxes?: [number, number, number, number][];
  multimask_output?: boolean;
}

interface SamGolden {
  name: string;
  call: { inputs: string; options: SamCall };
  processor: {
    original_size: [number, number];
    graph_points: number[][][];
    graph_labels: number[][];
  };
  /** Pixels whose post-processed logit Python puts within 1e-5 of the 0.0 threshold. */
  near_threshold_pixels: number;
  output: { scores: number[]; masks: { size: [number, number]; pixels_base64: string }[] }[];
}

// A mask pixel may differ from Python's only where its upsampled logit sits on the 0.0 threshold
// within float noise (ONNX Runtime vs torch, ~1e-6 here); at most 0.1 % of a mask's pixels.
const MAX_FLIPPED_SHARE = 0.001;

const cases = goldens.pipeline as unknown as SamGolden[];

function inputOf(golden: SamGolden): MaskGenerationInput {
  const { points, labels, boxes } = golden.call.options;
  return {
    image: join(modelPath(MODEL), golden.call.inputs),
    ...(points && { points }),
    ...(labels && { labels }),
    ...(boxes && { boxes }),
  };
}

function optionsOf(golden: SamGolden): MaskGenerationOptions {
  const multimask = golden.call.options.multimask_output;
  return multimask === undefined ? {} : { multimaskOutput: multimask };
}

describe('maskGeneration', forPipeline('maskGeneration'), () => {
  describe('pipeline', () => {
    for (const golden of cases) {
      it(`${golden.name} (mask-generation)`, GOLDEN, async ({ task }) => {
        const pipeline = new MaskGenerationPipeline(await load(MODEL), optionsOf(golden));
        const [result] = await pipeline.run([inputOf(golden)]);
        expect(result).toHaveLength(golden.output.length);
        let maxAbsDiff = 0;
        let flipped = 0;
        for (const [p, want] of golden.output.entries()) {
          const got = result?.[p] as PromptMasks;
          const comparison = compareDeep(got.scores, want.scores);
          expect(comparison.differences).toEqual([]);
          maxAbsDiff = Math.max(maxAbsDiff, comparison.maxAbsDiff);
          expect(got.masks).toHaveLength(want.masks.length);
          for (const [m, mask] of want.masks.entries()) {
            const expected = goldenPixels({ ...mask, mode: 'L' });
            const differing = differingPixels(
              await pngPixels(got.masks[m] as Uint8Array),
              expected,
            );
            expect(differing.length / (expected.width * expected.height)).toBeLessThanOrEqual(
              MAX_FLIPPED_SHARE,
            );
            flipped += differing.length;
          }
        }
        // Only pixels Python itself puts on the threshold may flip.
        expect(flipped).toBeLessThanOrEqual(golden.near_threshold_pixels);
        task.meta.maxAbsDiff = maxAbsDiff;
      });
    }
  });

  it('scales prompt coordinates as SamProcessor does, bit for bit', () => {
    for (const golden of cases) {
      const [height, width] = golden.processor.original_size;
      const feeds = promptFeeds(inputOf(golden), coordinateScale(height, width, 64));
      expect([...(feeds.points.data as Float32Array)], golden.name).toEqual(
        golden.processor.graph_points.flat(2),
      );
      expect([...(feeds.labels.data as BigInt64Array)].map(Number), golden.name).toEqual(
        golden.processor.graph_labels.flat(),
      );
    }
  });

  it('gives the same masks and scores for an image alone and inside a batch', async () => {
    const pipeline = new MaskGenerationPipeline(await load(MODEL));
    const inputs = cases.filter((c) => c.call.options.multimask_output === undefined).map(inputOf);
    const alone = await Promise.all(inputs.map(async (input) => (await pipeline.run([input]))[0]));
    const together = await pipeline.run([inputs[2] as MaskGenerationInput, ...inputs]);
    expect(together.slice(1)).toEqual(alone);
    expect(together[0]).toEqual(alone[2]);
  });

  it('refuses prompts it cannot read, naming the input', async () => {
    const pipeline = new MaskGenerationPipeline(await load(MODEL));
    const image = join(modelPath(MODEL), 'images/shapes_64x64_rgb.png');
    for (const bad of [
      { image },
      { image, points: [[1]] },
      { image, points: [[1, 2]], labels: [1, 1] },
      { image, points: [[1, 2]], labels: [5] },
      {
        image,
        points: [[1, 2]],
        boxes: [
          [0, 0, 5, 5],
          [1, 1, 6, 6],
        ],
      },
    ])
      await expect(pipeline.run([bad as MaskGenerationInput])).rejects.toMatchObject({
        name: 'InputError',
        field: 'inputs[0]',
      });
    expect(
      () => new MaskGenerationPipeline(pipeline.model, { threshold: 1 } as MaskGenerationOptions),
    ).toThrow(/threshold/);
  });
});
