// Semantic segmentation as Python's image-segmentation pipeline does it with subtask "semantic"
// (SegFormer and other *ForSemanticSegmentation models): the image processor, the model's
// low-resolution class logits upsampled bilinearly to the image's own size, a per-pixel argmax,
// and one mask per class present, in class order, with score null (semantic models give none).
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { ModelFolderError } from '../../errors.ts';
import { logitsOf } from '../runtime/label-scores.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { row, type FloatOutput } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { logitsNeed } from '../task-definition.ts';
import { axisTaps, sampleAt } from './bilinear-upsample.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { imageInput } from './image-task.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { pixelGroups, pixelInputName } from './pixel-batch.ts';
import { encodePng } from './png-encode.ts';

export const imageSegmentationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Only semantic segmentation; instance and panoptic models need their own post-processing. */
      subtask: z.enum(['semantic']).default('semantic'),
      /** Also return the model's class logits for each image (before upsampling). */
      returnTensor: z.boolean().default(false),
    })
    .strict(),
);

export type ImageSegmentationOptions = z.input<typeof imageSegmentationOptionsSchema.schema>;

export interface Segment {
  label: string;
  /** Always null for semantic segmentation, as in Python. */
  score: number | null;
  /** PNG, 8-bit grey, the image's size: 255 where the pixel is this class, 0 elsewhere. */
  mask: Uint8Array;
}

/** With returnTensor: the segments and the image's logits, [classes, height, width]. */
export interface SegmentationWithTensor {
  segments: Segment[];
  logits: FloatOutput;
}

export type SegmentationOutput = Segment[] | SegmentationWithTensor;

const TASK = 'imageSegmentation';

export class ImageSegmentationPipeline extends BasePipeline<
  ImageInput,
  SegmentationOutput,
  typeof imageSegmentationOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;

  constructor(model: LoadedModel, options: ImageSegmentationOptions = {}) {
    super(TASK, model, imageSegmentationOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(model.inputNames);
    if (model.config.labels.length === 0)
      throw new ModelFolderError(`${model.folder}/config.json has no id2label; ${TASK} needs it`, {
        field: 'id2label',
      });
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<SegmentationOutput[]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const logits: FloatOutput[] = [];
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    for (const group of pixelGroups(pixels)) {
      const out = logitsOf(this.model, await this.infer({ [this.inputName]: group.tensor }));
      if (out.dims.length !== 4)
        throw new ModelFolderError(
          `${TASK}: the model's logits are [${out.dims.join(', ')}]; a semantic segmentation model gives [batch, classes, height, width]`,
          { field: 'model' },
        );
      group.indices.forEach((index, i) => {
        logits[index] = { data: row(out, i).slice(), dims: out.dims.slice(1) };
      });
    }
    return Promise.all(
      images.map(async (image, i) => {
        const tensor = logits[i] as FloatOutput;
        const segments = await this.segments(tensor, image.height, image.width);
        return this.options.returnTensor ? { segments, logits: tensor } : segments;
      }),
    );
  }

  private async segments(logits: FloatOutput, height: number, width: number): Promise<Segment[]> {
    const classes = argmaxMap(logits, height, width);
    const labels = this.model.config.labels;
    const present = [...new Set(classes)].sort((a, b) => a - b);
    return Promise.all(
      present.map(async (id) => {
        const mask = new Uint8Array(classes.length);
        for (let p = 0; p < classes.length; p += 1) if (classes[p] === id) mask[p] = 255;
        return {
          label: labels[id] ?? String(id),
          score: null,
          mask: await encodePng(mask, width, height, 1),
        };
      }),
    );
  }
}

/**
 * The class of every pixel of the image: the logits upsampled to [height, width] and argmaxed
 * over classes (the first class wins a tie, as torch.argmax). Upsampled one pixel at a time, so
 * the [classes, height, width] scores are never held.
 */
export function argmaxMap(logits: FloatOutput, height: number, width: number): Uint16Array {
  const [classes = 0, inHeight = 0, inWidth = 0] = logits.dims;
  const rows = axisTaps(inHeight, height);
  const cols = axisTaps(inWidth, width);
  const planes = Array.from({ length: classes }, (_, c) =>
    logits.data.subarray(c * inHeight * inWidth, (c + 1) * inHeight * inWidth),
  );
  const out = new Uint16Array(height * width);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      let best = 0;
      let bestValue = -Infinity;
      for (let c = 0; c < classes; c += 1) {
        const value = sampleAt(planes[c] as Float32Array, inWidth, rows, cols, y, x);
        // A NaN logit never wins here (torch.argmax would pick it); such a model is broken anyway.
        if (value > bestValue) {
          bestValue = value;
          best = c;
        }
      }
      out[y * width + x] = best;
    }
  }
  return out;
}

export const imageSegmentationTask: TaskDefinition = {
  needs: {
    preprocessor: true,
    labels: true,
    outputs: [logitsNeed(4, 'per-pixel class logits [batch, labels, height, width]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return imageSegmentationOptionsSchema.schema;
  },
  create: (model, options) =>
    new ImageSegmentationPipeline(model, options as ImageSegmentationOptions),
  ...imageInput,
};
