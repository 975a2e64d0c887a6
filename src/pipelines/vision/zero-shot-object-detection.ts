// Zero-shot object detection with OWL-ViT, as Python's zero-shot-object-detection pipeline: every
// candidate label is a text query, the model scores each image patch's box against each query,
// and a box is kept for a label where sigmoid(logit) > threshold; boxes are scaled to the image and
// truncated to whole pixels, all of an image's detections sorted best first. Python runs one
// model call per (image, label); here an image batch runs once with every label as a query (the
// queries are padded and masked, so each scores as it would alone).
import type { Box, Detection } from './object-detection.ts';
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { ModelFolderError } from '../../errors.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row, textFeeds, type Feeds, type FloatOutput } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { labelsOf } from '../runtime/candidate-labels.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { imageInput } from './image-task.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { pixelGroups, pixelInputName } from './pixel-batch.ts';

export const zeroShotObjectDetectionOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** The labels to look for; a string is split on commas. Required. */
      candidateLabels: z.union([z.array(z.string()), z.string()]),
      /** Keep a box for a label where its score is above this (Python's default 0.1). */
      threshold: z.number().min(0).max(1).default(0.1),
      /** At most this many detections per image, best first; null keeps all. */
      topK: z.number().int().min(1).nullable().default(null),
    })
    .strict()
    .refine((options) => labelsOf(options.candidateLabels).length > 0, {
      path: ['candidateLabels'],
      message: 'zeroShotObjectDetection: candidateLabels must name at least one label',
    }),
);

export type ZeroShotObjectDetectionOptions = z.input<
  typeof zeroShotObjectDetectionOptionsSchema.schema
>;

// Boxes are Box's corners in whole pixels here: Python's zero-shot pipeline truncates them
// (`box.int()`), where object detection keeps fractions.
export type { Box, Detection };

const TASK = 'zeroShotObjectDetection';
const f = Math.fround;

export class ZeroShotObjectDetectionPipeline extends BasePipeline<
  ImageInput,
  Detection[],
  typeof zeroShotObjectDetectionOptionsSchema.schema
> {
  private readonly labels: string[];
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;
  private queries: Promise<Feeds> | undefined;

  constructor(model: LoadedModel, options: ZeroShotObjectDetectionOptions) {
    super(TASK, model, zeroShotObjectDetectionOptionsSchema, options);
    this.labels = labelsOf(this.options.candidateLabels);
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(model.inputNames);
    const needs = ['logits', 'pred_boxes'];
    if (
      !needs.every((n) => model.outputNames.includes(n)) ||
      !model.inputNames.includes('input_ids')
    )
      throw new ModelFolderError(
        `${TASK} needs an OWL-ViT style model taking input_ids and pixel_values and giving logits and pred_boxes; ${model.onnxPath} takes ${model.inputNames.join(', ')} and gives ${model.outputNames.join(', ')}`,
        { field: 'model' },
      );
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<Detection[][]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const queries = await this.labelQueries();
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    const results: Detection[][] = [];
    for (const group of pixelGroups(pixels)) {
      const outputs = await this.infer(
        { ...tile(queries, group.indices.length), [this.inputName]: group.tensor },
        ['logits', 'pred_boxes'],
      );
      const logits = floatOutput(outputs, 'logits');
      const boxes = floatOutput(outputs, 'pred_boxes');
      group.indices.forEach((index, i) => {
        const image = images[index] as { width: number; height: number };
        results[index] = this.detections(logits, boxes, i, image.width, image.height);
      });
    }
    return results;
  }

  private detections(
    logits: FloatOutput,
    boxes: FloatOutput,
    image: number,
    width: number,
    height: number,
  ): Detection[] {
    const [, patches = 0, queries = 0] = logits.dims;
    const scores = row(logits, image);
    const corners = row(boxes, image);
    const threshold = f(this.options.threshold);
    const found: Detection[] = [];
    // Python's order before sorting: label by label, patches in order.
    this.labels.forEach((label, q) => {
      for (let p = 0; p < patches; p += 1) {
        const score = f(1 / f(1 + Math.exp(-(scores[p * queries + q] as number))));
        if (score > threshold)
          found.push({ score, label, box: scaledBox(corners, p, width, height) });
      }
    });
    // Stable: equal scores keep that order, as Python's sorted(reverse=True).
    const sorted = found
      .map((d, i) => ({ d, i }))
      .sort((a, b) => b.d.score - a.d.score || a.i - b.i)
      .map(({ d }) => d);
    return this.options.topK === null ? sorted : sorted.slice(0, this.options.topK);
  }

  /** The labels as queries, tokenized on first use and kept: the same for every batch. */
  private labelQueries(): Promise<Feeds> {
    this.queries ??= (async () =>
      textFeeds(await this.encode(this.labels), this.model.inputNames, this.tokenizer.padId))();
    this.queries.catch(() => (this.queries = undefined));
    return this.queries;
  }
}

/** OWL-ViT reads the queries as [images × queries, length]: each image gets every query. */
function tile(queries: Feeds, images: number): Feeds {
  const out: Feeds = {};
  for (const [name, tensor] of Object.entries(queries)) {
    const data = tensor.data as BigInt64Array;
    const copy = new BigInt64Array(data.length * images);
    for (let i = 0; i < images; i += 1) copy.set(data, i * data.length);
    const [rows = 0, length = 0] = tensor.dims;
    out[name] = new Tensor('int64', copy, [rows * images, length]);
  }
  return out;
}

/** Center format, relative -> corners in pixels, float32 as torch, truncated as `.int()`. */
function scaledBox(boxes: Float32Array, patch: number, width: number, height: number): Box {
  const at = patch * 4;
  const cx = boxes[at] as number;
  const cy = boxes[at + 1] as number;
  const halfW = f(0.5 * (boxes[at + 2] as number));
  const halfH = f(0.5 * (boxes[at + 3] as number));
  const pixel = (v: number, size: number): number => Math.trunc(f(v * size)) || 0;
  return {
    xmin: pixel(f(cx - halfW), width),
    ymin: pixel(f(cy - halfH), height),
    xmax: pixel(f(cx + halfW), width),
    ymax: pixel(f(cy + halfH), height),
  };
}

export const zeroShotObjectDetectionTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    preprocessor: true,
    inputs: ['input_ids', 'pixel_values'],
    outputs: [
      { names: ['logits'], rank: 3, what: 'per-box query logits [batch, boxes, queries]' },
      { names: ['pred_boxes'], rank: 3, what: 'boxes [batch, boxes, 4]' },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return zeroShotObjectDetectionOptionsSchema.schema;
  },
  create: (model, options) =>
    new ZeroShotObjectDetectionPipeline(model, options as ZeroShotObjectDetectionOptions),
  // One image row: the label queries are fixed by the options and run with every batch.
  ...imageInput,
};
