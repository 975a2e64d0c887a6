// Monocular depth as Python's depth-estimation pipeline gives it (GLPN, DPT, Depth Anything: any
// model with a `predicted_depth` output [batch, height, width]): the prediction resized to the
// image with torch's bicubic interpolation, and an 8-bit depth image scaled from its minimum (0)
// to its maximum (255), as PNG bytes. The float map itself comes back when asked for.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { bySize, imageFeeds, prepareImages } from './image-batch.ts';
import type { ImageInput } from './image-decode.ts';
import { loadSharp } from './load-sharp.ts';
import { compilePreprocessor, type ImagePreprocessor } from './image-preprocess.ts';
import { imageInput } from './image-task.ts';
import { torchBicubic, type FloatImage } from './torch-bicubic.ts';

export const depthEstimationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Also return the float depth map at the image's size (Python's `predicted_depth`). */
      predictedDepth: z.boolean().default(false),
    })
    .strict(),
);

export type DepthEstimationOptions = z.input<typeof depthEstimationOptionsSchema.schema>;

export interface DepthResult {
  /** Greyscale PNG at the image's size: the nearest point 0 or 255 by the model's convention. */
  depth: Uint8Array;
  /** Row-major float32 depth, `height` rows of `width`; only with `predictedDepth: true`. */
  predictedDepth?: FloatImage;
}

const TASK = 'depthEstimation';
const OUTPUT = 'predicted_depth';

export class DepthEstimationPipeline extends BasePipeline<
  ImageInput,
  DepthResult,
  typeof depthEstimationOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;

  constructor(model: LoadedModel, options: DepthEstimationOptions = {}) {
    super(TASK, model, depthEstimationOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    if (!model.outputNames.includes(OUTPUT))
      throw new InferenceError(
        `${model.onnxPath} has no output '${OUTPUT}' (outputs: ${model.outputNames.join(', ')}); ${TASK} needs a depth model`,
      );
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<DepthResult[]> {
    const images = await prepareImages(inputs, this.preprocessor);
    const maps = await bySize(images, async (group) => {
      const outputs = await this.infer(imageFeeds(group, this.model.inputNames), [OUTPUT]);
      const depth = floatOutput(outputs, OUTPUT);
      const [, height = 0, width = 0] = depth.dims;
      return group.map((image, b) =>
        torchBicubic(
          {
            data: depth.data.subarray(b * height * width, (b + 1) * height * width),
            width,
            height,
          },
          image.original.width,
          image.original.height,
        ),
      );
    });
    return Promise.all(
      maps.map(async (map) => ({
        depth: await depthPng(map),
        ...(this.options.predictedDepth ? { predictedDepth: map } : {}),
      })),
    );
  }
}

/** Python: ((d - min) / (max - min) * 255).astype(uint8), in float32, then PIL's PNG. */
export async function depthPng(map: FloatImage): Promise<Uint8Array> {
  const f = Math.fround;
  let min = Infinity;
  let max = -Infinity;
  for (const v of map.data) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const range = f(max - min);
  const pixels = new Uint8Array(map.data.length);
  // A flat map divides by zero in Python (NaN pixels); it is black here.
  if (range > 0)
    map.data.forEach((v, i) => {
      pixels[i] = Math.trunc(f(f(f(v - min) / range) * 255));
    });
  const sharp = await loadSharp();
  const png = await sharp(pixels, { raw: { width: map.width, height: map.height, channels: 1 } })
    .toColourspace('b-w')
    .png()
    .toBuffer();
  return new Uint8Array(png);
}

export const depthEstimationTask: TaskDefinition = {
  needs: {
    preprocessor: true,
    outputs: [{ names: ['predicted_depth'], what: 'a depth map [batch, height, width]' }],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return depthEstimationOptionsSchema.schema;
  },
  create: (model, options) => new DepthEstimationPipeline(model, options as DepthEstimationOptions),
  pythonOutput: (result) => {
    const { depth, predictedDepth } = result as DepthResult;
    if (predictedDepth === undefined) return { depth };
    const { data, width, height } = predictedDepth;
    const rows = Array.from({ length: height }, (_, y) =>
      data.subarray(y * width, (y + 1) * width),
    );
    return { predicted_depth: rows, depth };
  },
  ...imageInput,
};
