// Object detection as Python's pipeline does it for DETR-style models (DETR, YOLOS, and others
// whose outputs are `logits` with a trailing no-object class and `pred_boxes` as normalised
// centre/size boxes): softmax per query, the best real class, kept above a threshold, boxes scaled
// to the original image's pixels. Queries come back in the model's order, as in Python.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { softmax } from '../runtime/math.ts';
import { labelOf } from '../runtime/label-scores.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { bySize, imageFeeds, prepareImages, type PreparedImage } from './image-batch.ts';
import type { ImageInput } from './image-decode.ts';
import { compilePreprocessor, type ImagePreprocessor } from './image-preprocess.ts';
import { imageInput } from './image-task.ts';

export const objectDetectionOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Keep detections scoring above this (Python's default 0.5). */
      threshold: z.number().min(0).max(1).default(0.5),
      /** Python truncates box corners to whole pixels; false returns them unrounded. */
      integerBoxes: z.boolean().default(true),
    })
    .strict(),
);

export type ObjectDetectionOptions = z.input<typeof objectDetectionOptionsSchema.schema>;

/** Corners in the original image's pixels, (0, 0) top left. */
export interface Box {
  xmin: number;
  ymin: number;
  xmax: number;
  ymax: number;
}

export interface Detection {
  score: number;
  label: string;
  box: Box;
}

const TASK = 'objectDetection';
const f = Math.fround;

export class ObjectDetectionPipeline extends BasePipeline<
  ImageInput,
  Detection[],
  typeof objectDetectionOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;

  constructor(model: LoadedModel, options: ObjectDetectionOptions = {}) {
    super(TASK, model, objectDetectionOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    for (const name of ['logits', 'pred_boxes'])
      if (!model.outputNames.includes(name))
        throw new InferenceError(
          `${model.onnxPath} has no output '${name}' (outputs: ${model.outputNames.join(', ')}); ${TASK} needs DETR-style logits and pred_boxes`,
        );
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<Detection[][]> {
    const images = await prepareImages(inputs, this.preprocessor);
    return bySize(images, async (group) => {
      const outputs = await this.infer(imageFeeds(group, this.model.inputNames), [
        'logits',
        'pred_boxes',
      ]);
      const logits = floatOutput(outputs, 'logits');
      const boxes = floatOutput(outputs, 'pred_boxes');
      return group.map((image, b) => this.detections(image, b, logits, boxes));
    });
  }

  private detections(
    image: PreparedImage,
    b: number,
    logits: { data: Float32Array; dims: readonly number[] },
    boxes: { data: Float32Array; dims: readonly number[] },
  ): Detection[] {
    const queries = logits.dims[1] ?? 0;
    const classes = logits.dims[2] ?? 0;
    // torch compares the float32 scores with the threshold cast to float32.
    const threshold = f(this.options.threshold);
    const { width, height } = image.original;
    const found: Detection[] = [];
    for (let q = 0; q < queries; q += 1) {
      const row = (b * queries + q) * classes;
      const probs = softmax(logits.data.subarray(row, row + classes));
      // The last class is "no object".
      let best = 0;
      for (let c = 1; c < classes - 1; c += 1) if ((probs[c] ?? 0) > (probs[best] ?? 0)) best = c;
      const score = probs[best] ?? 0;
      if (!(score > threshold)) continue;
      const at = (b * queries + q) * 4;
      const [cx, cy, w, h] = [0, 1, 2, 3].map((i) => boxes.data[at + i] as number) as [
        number,
        number,
        number,
        number,
      ];
      // center_to_corners_format then the scale to (width, height), each step in float32.
      const corner = (centre: number, extent: number, sign: number, scale: number): number => {
        const value = f(f(centre + sign * f(0.5 * extent)) * scale);
        // + 0 turns a truncated -0.x into 0, as Python's int() gives it (JSON would keep -0 apart).
        return this.options.integerBoxes ? Math.trunc(value) + 0 : value;
      };
      found.push({
        score,
        label: labelOf(this.model, best),
        box: {
          xmin: corner(cx, w, -1, width),
          ymin: corner(cy, h, -1, height),
          xmax: corner(cx, w, 1, width),
          ymax: corner(cy, h, 1, height),
        },
      });
    }
    return found;
  }
}

export const objectDetectionTask: TaskDefinition = {
  needs: {
    preprocessor: true,
    labels: true,
    outputs: [
      { names: ['logits'], rank: 3, what: 'class logits per box [batch, boxes, labels + 1]' },
      { names: ['pred_boxes'], rank: 3, what: 'boxes [batch, boxes, 4]' },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return objectDetectionOptionsSchema.schema;
  },
  create: (model, options) => new ObjectDetectionPipeline(model, options as ObjectDetectionOptions),
  ...imageInput,
};
