// Zero-shot image classification with a CLIP-style model, as Python's
// zero-shot-image-classification pipeline: each candidate label becomes a text ("This is a photo
// of {label}."), the texts are tokenized once (padded to the longest), and one run of the
// two-tower model scores every image of the batch against every text; a softmax over an image's
// row gives its label scores. Labels come from the options, so the texts are the same for every
// batch and an image's scores never depend on its batch mates.
import { z } from 'zod';
import { BasePipeline } from '../base-pipeline.ts';
import { ModelFolderError } from '../../errors.ts';
import { softmax } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row, textFeeds, type Feeds } from '../runtime/tensors.ts';
import { UNIT_COST, type TaskDefinition } from '../task-definition.ts';
import { labelsOf, pythonFormat } from '../text/zero-shot-classification.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { imageInput } from './image-input-schema.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { pixelGroups, pixelInputName } from './pixel-batch.ts';

export const zeroShotImageClassificationOptionsSchema = z
  .object({
    /** The labels to score; a string is split on commas. Required. */
    candidateLabels: z.union([z.array(z.string()), z.string()]),
    /** Turns a label into the text the model reads; `{}` is replaced by the label (Python format). */
    hypothesisTemplate: z.string().default('This is a photo of {}.'),
  })
  .strict()
  // Checked here rather than when the model loads, so that validate-config finds them too.
  .superRefine((options, ctx) => {
    const [first] = labelsOf(options.candidateLabels);
    if (first === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['candidateLabels'],
        message: `${TASK}: candidateLabels must name at least one label`,
      });
      return;
    }
    const template = options.hypothesisTemplate;
    let problem: string | undefined;
    try {
      if (pythonFormat(template, first) === template)
        problem = `${TASK}: hypothesisTemplate "${template}" has no {} where the label should go`;
    } catch (err) {
      problem = err instanceof Error ? err.message : String(err);
    }
    if (problem !== undefined)
      ctx.addIssue({ code: 'custom', path: ['hypothesisTemplate'], message: problem });
  });

export type ZeroShotImageClassificationOptions = z.input<
  typeof zeroShotImageClassificationOptionsSchema
>;

export interface ImageLabelScore {
  label: string;
  score: number;
}

const TASK = 'zeroShotImageClassification';
const OUTPUT = 'logits_per_image';

export class ZeroShotImageClassificationPipeline extends BasePipeline<
  ImageInput,
  ImageLabelScore[],
  typeof zeroShotImageClassificationOptionsSchema
> {
  private readonly labels: string[];
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;
  private textFeeds: Promise<Feeds> | undefined;

  constructor(model: LoadedModel, options: ZeroShotImageClassificationOptions) {
    super(TASK, model, zeroShotImageClassificationOptionsSchema, options);
    this.labels = labelsOf(this.options.candidateLabels);
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(model.inputNames);
    if (!model.outputNames.includes(OUTPUT) || !model.inputNames.includes('input_ids'))
      throw new ModelFolderError(
        `${TASK} needs a two-tower model (CLIP) taking input_ids and pixel_values and giving ${OUTPUT}; ${model.onnxPath} takes ${model.inputNames.join(', ')} and gives ${model.outputNames.join(', ')}`,
        { field: 'model' },
      );
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<ImageLabelScore[][]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const text = await this.labelTexts();
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    const results: ImageLabelScore[][] = [];
    for (const group of pixelGroups(pixels)) {
      const logits = floatOutput(
        await this.infer({ ...text, [this.inputName]: group.tensor }, [OUTPUT]),
        OUTPUT,
      );
      group.indices.forEach((index, i) => {
        results[index] = this.ranked(softmax(row(logits, i)));
      });
    }
    return results;
  }

  /** The labels' texts, tokenized on first use and kept: the same for every batch. */
  private labelTexts(): Promise<Feeds> {
    this.textFeeds ??= (async () => {
      const texts = this.labels.map((label) =>
        pythonFormat(this.options.hypothesisTemplate, label),
      );
      const encoded = await this.encode(texts);
      return textFeeds(encoded, this.model.inputNames, this.tokenizer.padId);
    })();
    this.textFeeds.catch(() => (this.textFeeds = undefined));
    return this.textFeeds;
  }

  /** Best first; equal scores keep the labels' order (Python sorts stably by -score). */
  private ranked(scores: number[]): ImageLabelScore[] {
    const order = scores
      .map((_, i) => i)
      .sort((a, b) => (scores[b] as number) - (scores[a] as number) || a - b);
    return order.map((i) => ({ label: this.labels[i] as string, score: scores[i] as number }));
  }
}

export const zeroShotImageClassificationTask: TaskDefinition = {
  task: TASK,
  optionsSchema: zeroShotImageClassificationOptionsSchema,
  create: (model, options) =>
    new ZeroShotImageClassificationPipeline(model, options as ZeroShotImageClassificationOptions),
  ...imageInput,
  // One image row; the label texts are fixed by the options and run with every batch.
  cost: () => Promise.resolve(UNIT_COST),
};
