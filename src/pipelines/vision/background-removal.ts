// Background removal with a one-class segmentation net (RMBG / U²-Net style), as RMBG's own
// Python pipeline does it: the net's foreground map (a sigmoid over its logits, unless the net
// gives probabilities already), upsampled bilinearly to the image's size, stretched to [0, 1] by
// its minimum and maximum, scaled to 8 bits (truncated, as numpy's astype(uint8)), and put into
// the image as its alpha channel (PIL's putalpha: the RGB pixels are kept as they are).
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { ModelFolderError } from '../../errors.ts';
import { logitsOf } from '../runtime/label-scores.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { row, type FloatOutput } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { upsamplePlane } from './bilinear-upsample.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { imageInput } from './image-task.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { pixelGroups, pixelInputName } from './pixel-batch.ts';
import { encodePng } from './png-encode.ts';

export const backgroundRemovalOptionsSchema = lazySchema((z) =>
  z
    .object({
      /**
       * How the net's output becomes a foreground probability. Default: 'sigmoid' when the output
       * is called `logits` (transformers' name for raw scores), else 'none' (RMBG and U²-Net ONNX
       * files end in a sigmoid already).
       */
      activation: z.enum(['sigmoid', 'none']).optional(),
      /** Stretch the upsampled map so its minimum is 0 and its maximum 255, as RMBG does. */
      minMax: z.boolean().default(true),
      /** Also return the mask alone (PNG, 8-bit grey). */
      returnMask: z.boolean().default(false),
      /** Also return the net's output for the image, before upsampling. */
      returnTensor: z.boolean().default(false),
    })
    .strict(),
);

export type BackgroundRemovalOptions = z.input<typeof backgroundRemovalOptionsSchema.schema>;

export interface BackgroundRemovalResult {
  /** PNG, RGBA, the input's size: its RGB pixels with the foreground mask as alpha. */
  image: Uint8Array;
  /** With returnMask: the alpha channel alone, PNG 8-bit grey. */
  mask?: Uint8Array;
  /** With returnTensor: the net's output for the image, [height, width] (`{data, dims}`). */
  logits?: FloatOutput;
}

const TASK = 'backgroundRemoval';

export class BackgroundRemovalPipeline extends BasePipeline<
  ImageInput,
  BackgroundRemovalResult,
  typeof backgroundRemovalOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;
  private readonly activation: 'sigmoid' | 'none';

  constructor(model: LoadedModel, options: BackgroundRemovalOptions = {}) {
    super(TASK, model, backgroundRemovalOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(model.inputNames);
    this.activation =
      this.options.activation ?? (model.outputNames.includes('logits') ? 'sigmoid' : 'none');
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<BackgroundRemovalResult[]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const maps: FloatOutput[] = [];
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    for (const group of pixelGroups(pixels)) {
      const out = logitsOf(this.model, await this.infer({ [this.inputName]: group.tensor }));
      const dims = out.dims.length === 4 && out.dims[1] === 1 ? [out.dims[2], out.dims[3]] : [];
      const [height, width] = out.dims.length === 3 ? [out.dims[1], out.dims[2]] : dims;
      if (height === undefined || width === undefined)
        throw new ModelFolderError(
          `${TASK}: the model's output is [${out.dims.join(', ')}]; a one-class segmentation net gives [batch, 1, height, width]`,
          { field: 'model' },
        );
      group.indices.forEach((index, i) => {
        maps[index] = { data: row(out, i).slice(), dims: [height, width] };
      });
    }
    return Promise.all(
      images.map(async (image, i) => {
        const map = maps[i] as FloatOutput;
        const alpha = alphaMask(
          foregroundMap(map, image.height, image.width, this.activation, this.options.minMax),
        );
        const { width, height, data } = image;
        const rgba = new Uint8Array(width * height * 4);
        for (let p = 0; p < width * height; p += 1) {
          rgba[p * 4] = data[p * 3] as number;
          rgba[p * 4 + 1] = data[p * 3 + 1] as number;
          rgba[p * 4 + 2] = data[p * 3 + 2] as number;
          rgba[p * 4 + 3] = alpha[p] as number;
        }
        const result: BackgroundRemovalResult = { image: await encodePng(rgba, width, height, 4) };
        if (this.options.returnMask) result.mask = await encodePng(alpha, width, height, 1);
        if (this.options.returnTensor) result.logits = map;
        return result;
      }),
    );
  }
}

const f = Math.fround;

/**
 * The foreground map at the image's size, in [0, 1] when minMax is on, in float32 as torch
 * computes it. A flat map (maximum = minimum) is left unstretched: Python would divide by zero.
 */
export function foregroundMap(
  map: FloatOutput,
  height: number,
  width: number,
  activation: 'sigmoid' | 'none',
  minMax: boolean,
): Float32Array {
  const [inHeight = 0, inWidth = 0] = map.dims;
  const probs =
    activation === 'sigmoid' ? map.data.map((v) => f(1 / f(1 + Math.exp(-v)))) : map.data;
  const up = upsamplePlane(probs, inHeight, inWidth, height, width);
  if (!minMax) return up;
  let low = Infinity;
  let high = -Infinity;
  for (const v of up) {
    if (v < low) low = v;
    if (v > high) high = v;
  }
  if (!(high > low)) return up;
  const range = f(high - low);
  return up.map((v) => f(f(v - low) / range));
}

/** Python's (map * 255).astype(uint8): truncated; clamped where numpy would wrap. */
export function alphaMask(map: Float32Array): Uint8Array {
  const out = new Uint8Array(map.length);
  for (let p = 0; p < map.length; p += 1) {
    const v = f((map[p] as number) * 255);
    out[p] = v >= 255 ? 255 : v > 0 ? Math.trunc(v) : 0;
  }
  return out;
}

export const backgroundRemovalTask: TaskDefinition = {
  needs: { preprocessor: true },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return backgroundRemovalOptionsSchema.schema;
  },
  create: (model, options) =>
    new BackgroundRemovalPipeline(model, options as BackgroundRemovalOptions),
  ...imageInput,
};
