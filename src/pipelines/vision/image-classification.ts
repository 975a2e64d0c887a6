// Image classification as Python's pipeline does it: load_image (EXIF, RGB), the PIL-backend
// image processor from preprocessor_config.json, then the same scores as text classification
// (softmax, or sigmoid for multi-label / one-logit models), sorted, top 5 by default.
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import {
  defaultScoreFunction,
  logitsOf,
  rankLabels,
  type LabelScore,
  type ScoreFunction,
} from '../runtime/label-scores.ts';
import { row } from '../runtime/tensors.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { logitsNeed } from '../task-definition.ts';
import { imageInput } from './image-task.ts';

export type { ImageInput } from './image-decode.ts';

export const imageClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Default: chosen from the model config as Python chooses it. */
      functionToApply: z.enum(['softmax', 'sigmoid', 'none']).optional(),
      /** How many labels to return, best first (Python's default 5); null returns every label. */
      topK: z.number().int().min(1).nullable().default(5),
    })
    .strict(),
);

export type ImageClassificationOptions = z.input<typeof imageClassificationOptionsSchema.schema>;

const TASK = 'imageClassification';

export class ImageClassificationPipeline extends BasePipeline<
  ImageInput,
  LabelScore[],
  typeof imageClassificationOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;
  private readonly apply: ScoreFunction;
  private readonly inputName: string;

  constructor(model: LoadedModel, options: ImageClassificationOptions = {}) {
    super(TASK, model, imageClassificationOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.apply = this.options.functionToApply ?? defaultScoreFunction(model);
    this.inputName = model.inputNames.includes('pixel_values')
      ? 'pixel_values'
      : (model.inputNames[0] ?? 'pixel_values');
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<LabelScore[][]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    const first = pixels[0];
    if (first === undefined) return [];
    if (pixels.some((p) => p.height !== first.height || p.width !== first.width)) {
      // Only configs that skip resizing can get here; such images cannot share one batch.
      const results: LabelScore[][] = [];
      for (const input of inputs) results.push(...(await this.runBatch([input])));
      return results;
    }
    const size = first.data.length;
    const batch = new Float32Array(size * pixels.length);
    pixels.forEach((p, i) => batch.set(p.data, i * size));
    const outputs = await this.infer({
      [this.inputName]: new Tensor('float32', batch, [pixels.length, 3, first.height, first.width]),
    });
    const logits = logitsOf(this.model, outputs);
    return pixels.map((_, b) =>
      rankLabels(this.model, row(logits, b), this.apply, this.options.topK),
    );
  }
}

export const imageClassificationTask: TaskDefinition = {
  needs: {
    preprocessor: true,
    labels: true,
    outputs: [logitsNeed(2, 'class logits [batch, labels]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return imageClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new ImageClassificationPipeline(model, options as ImageClassificationOptions),
  ...imageInput,
};
