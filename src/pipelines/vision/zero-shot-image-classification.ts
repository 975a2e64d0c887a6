// Zero-shot image classification with a CLIP-style model, as Python's
// zero-shot-image-classification pipeline: each candidate label becomes a text ("This is a photo
// of {label}."), the texts are tokenized once (padded to the longest), and one run of the
// two-tower model scores every image of the batch against every text; a softmax over an image's
// row gives its label scores. Labels come from the options, so the texts are the same for every
// batch and an image's scores never depend on its batch mates. A model exported as two towers
// (text_model.onnx + vision_model.onnx, as Optimum names them) runs the text tower once per
// pipeline and the vision tower per batch, and computes CLIP's logits from their embeddings.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { ConfigError, ModelFolderError } from '../../errors.ts';
import { softmax } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row, textFeeds, type Feeds } from '../runtime/tensors.ts';
import type { Tensor } from '../../runtime/tensor.ts';
import type { OrtSession } from '../../runtime/session.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { checkCandidateLabels, labelsOf, pythonFormat } from '../runtime/candidate-labels.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { imageInput } from './image-task.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { pixelGroups, pixelInputName } from './pixel-batch.ts';

const TASK = 'zeroShotImageClassification';

export const zeroShotImageClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** The labels to score; a string is split on commas. Required. */
      candidateLabels: z.union([z.array(z.string()), z.string()]),
      /** Turns a label into the text the model reads; `{}` is replaced by the label (Python format). */
      hypothesisTemplate: z.string().default('This is a photo of {}.'),
      /**
       * Split towers only: the factor CLIP multiplies cosine similarities by, exp of its trained
       * logit_scale (100 for OpenAI's CLIP). Neither tower holds it; a single-file model does.
       */
      logitScale: z.number().positive().optional(),
    })
    .strict()
    .superRefine(checkCandidateLabels(TASK)),
);

export type ZeroShotImageClassificationOptions = z.input<
  typeof zeroShotImageClassificationOptionsSchema.schema
>;

export interface ImageLabelScore {
  label: string;
  score: number;
}

const OUTPUT = 'logits_per_image';

interface Towers {
  text: OrtSession;
  vision: OrtSession;
  logitScale: number;
}

export class ZeroShotImageClassificationPipeline extends BasePipeline<
  ImageInput,
  ImageLabelScore[],
  typeof zeroShotImageClassificationOptionsSchema.schema
> {
  private readonly labels: string[];
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;
  private readonly towers: Towers | undefined;
  private textFeeds: Promise<Feeds> | undefined;
  private textEmbeddings: Promise<Float32Array[]> | undefined;

  constructor(model: LoadedModel, options: ZeroShotImageClassificationOptions) {
    super(TASK, model, zeroShotImageClassificationOptionsSchema, options);
    this.labels = labelsOf(this.options.candidateLabels);
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(model.inputNames);
    this.towers = towersOf(model, this.options.logitScale);
    if (this.towers === undefined && this.options.logitScale !== undefined)
      throw new ConfigError(
        `${TASK}: logitScale is for models split into text_model.onnx and vision_model.onnx; ${model.onnxPath} computes its own`,
        { field: 'options.logitScale' },
      );
    if (
      this.towers === undefined &&
      (!model.outputNames.includes(OUTPUT) || !model.inputNames.includes('input_ids'))
    )
      throw new ModelFolderError(
        `${TASK} needs a two-tower model (CLIP): one graph taking input_ids and pixel_values and giving ${OUTPUT}, or text_model.onnx and vision_model.onnx; ${model.onnxPath} takes ${model.inputNames.join(', ')} and gives ${model.outputNames.join(', ')}`,
        { field: 'model' },
      );
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<ImageLabelScore[][]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    const results: ImageLabelScore[][] = [];
    for (const group of pixelGroups(pixels)) {
      const logits = await this.logits(group.tensor);
      group.indices.forEach((index, i) => {
        results[index] = this.ranked(softmax(logits[i] as Float32Array));
      });
    }
    return results;
  }

  /** logits_per_image: one row per image of the tensor, one logit per label. */
  private async logits(pixelValues: Tensor): Promise<Float32Array[]> {
    const rows = pixelValues.dims[0] ?? 0;
    if (this.towers === undefined) {
      const text = await this.labelTexts(this.model.inputNames);
      const out = floatOutput(
        await this.infer({ ...text, [this.inputName]: pixelValues }, [OUTPUT]),
        OUTPUT,
      );
      return Array.from({ length: rows }, (_, i) => row(out, i));
    }
    const { vision, logitScale } = this.towers;
    const texts = await this.labelEmbeddings(this.towers);
    const out = floatOutput(
      await this.infer(
        { [pixelInputName(vision.inputNames)]: pixelValues },
        ['image_embeds'],
        vision,
      ),
      'image_embeds',
    );
    // CLIPModel: logit_scale * normalized image embedding . normalized text embedding.
    return Array.from({ length: rows }, (_, i) => {
      const image = unit(row(out, i));
      return Float32Array.from(texts, (text) => Math.fround(logitScale * dot(image, text)));
    });
  }

  /** The labels' texts, tokenized on first use and kept: the same for every batch. */
  private labelTexts(inputNames: readonly string[]): Promise<Feeds> {
    this.textFeeds ??= (async () => {
      const texts = this.labels.map((label) =>
        pythonFormat(this.options.hypothesisTemplate, label),
      );
      const encoded = await this.encode(texts);
      return textFeeds(encoded, inputNames, this.tokenizer.padId);
    })();
    this.textFeeds.catch(() => (this.textFeeds = undefined));
    return this.textFeeds;
  }

  /** Split towers: the labels' normalized text embeddings, computed once per pipeline. */
  private labelEmbeddings({ text }: Towers): Promise<Float32Array[]> {
    this.textEmbeddings ??= (async () => {
      const feeds = await this.labelTexts(text.inputNames);
      const out = floatOutput(await this.infer(feeds, ['text_embeds'], text), 'text_embeds');
      return this.labels.map((_, i) => unit(row(out, i)));
    })();
    this.textEmbeddings.catch(() => (this.textEmbeddings = undefined));
    return this.textEmbeddings;
  }

  /** Best first; equal scores keep the labels' order (Python sorts stably by -score). */
  private ranked(scores: number[]): ImageLabelScore[] {
    const order = scores
      .map((_, i) => i)
      .sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
    return order.map((i) => ({ label: this.labels[i] as string, score: scores[i] as number }));
  }
}

/** The model's split towers, when its folder holds text_model.onnx and vision_model.onnx. */
function towersOf(model: LoadedModel, logitScale: number | undefined): Towers | undefined {
  const text = model.sessions.get('text_model');
  const vision = model.sessions.get('vision_model');
  if (text === undefined || vision === undefined) return undefined;
  if (logitScale === undefined)
    throw new ConfigError(
      `${TASK}: ${model.folder} holds the towers as separate graphs, which do not carry CLIP's logit scale; set options.logitScale (exp of the model's logit_scale, 100 for OpenAI's CLIP)`,
      { field: 'options.logitScale' },
    );
  return { text, vision, logitScale };
}

/** The vector divided by its length, in float32 as torch's norm and division. */
function unit(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const v of vector) sum += v * v;
  const norm = Math.fround(Math.sqrt(sum));
  return vector.map((v) => Math.fround(v / norm));
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i += 1) sum += (a[i] as number) * (b[i] as number);
  return Math.fround(sum);
}

export const zeroShotImageClassificationTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    preprocessor: true,
    outputs: [
      {
        names: ['logits_per_image', 'image_embeds'],
        what: "CLIP's logits_per_image, or image_embeds of a vision_model.onnx tower",
      },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return zeroShotImageClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new ZeroShotImageClassificationPipeline(model, options as ZeroShotImageClassificationOptions),
  // One image row: the label texts are fixed by the options and run with every batch.
  ...imageInput,
};
