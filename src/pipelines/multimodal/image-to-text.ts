// Image captioning with a VisionEncoderDecoder export (Optimum's layout: encoder_model.onnx over
// pixel_values, then the decoder with its self- and cross-attention cache), as transformers 4.x's
// ImageToTextPipeline ran it: the image processor from preprocessor_config.json, the encoder once
// per batch, greedy decoding, sampling or beam search on the seq2seq loops, and the generated ids
// decoded without special tokens. transformers 5 removed the pipeline; its defaults are kept
// (max_new_tokens 256 under the model's generation_config, no num_beams of its own).
import type { z } from 'zod';
import { InputError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { beamSearch } from '../seq2seq/beam-search.ts';
import { greedySearch } from '../seq2seq/greedy-search.ts';
import {
  resolveSeq2SeqDefaults,
  seq2seqOptionsSchema,
  type Seq2SeqDefaults,
} from '../seq2seq/seq2seq-options.ts';
import {
  runEncoder,
  Seq2SeqDecoder,
  seq2seqLayoutOf,
  type RunSession,
  type Seq2SeqLayout,
} from '../seq2seq/seq2seq-model.ts';
import type { GenerationCohort, StepwiseGenerator } from '../generation/stepwise.ts';
import { assertStepwiseSettings, seq2seqCohort } from '../seq2seq/seq2seq-cohort.ts';
import type { TaskDefinition } from '../task-definition.ts';
import { decodeImage, type ImageInput } from '../vision/image-decode.ts';
import { imageInput } from '../vision/image-task.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from '../vision/image-preprocess.ts';
import { pixelGroups, pixelInputName, type PixelValues } from '../vision/pixel-batch.ts';
import { generatedText } from '../python-output.ts';
import { readySchema } from '../../options/lazy-schema.ts';

// Truncation is about text inputs; an image is always resized to the encoder's input.
export const imageToTextOptionsSchema = seq2seqOptionsSchema.omit({ truncation: true }).strict();

export type ImageToTextOptions = z.input<typeof imageToTextOptionsSchema>;

/** Python's `[{"generated_text": ...}]` for one image, as one record. */
export interface ImageToTextOutput {
  generatedText: string;
}

const TASK = 'imageToText';

export class ImageToTextPipeline
  extends BasePipeline<ImageInput, ImageToTextOutput, typeof imageToTextOptionsSchema>
  implements StepwiseGenerator<PixelValues>
{
  readonly layout: Seq2SeqLayout;
  private readonly preprocessor: ImagePreprocessor;
  private readonly inputName: string;
  private defaults: Promise<Seq2SeqDefaults> | undefined;

  constructor(model: LoadedModel, options: ImageToTextOptions = {}) {
    super(TASK, model, readySchema(imageToTextOptionsSchema), options);
    this.layout = seq2seqLayoutOf(model);
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    this.inputName = pixelInputName(this.layout.encoder.inputNames);
  }

  /** Generation settings, resolved once from the model folder. */
  resolved(): Promise<Seq2SeqDefaults> {
    this.defaults ??= resolveSeq2SeqDefaults(
      this.model,
      TASK,
      'image-to-text',
      { ...this.options, truncation: false },
      { numBeams: 1 },
    );
    return this.defaults;
  }

  async ready(): Promise<void> {
    await this.resolved();
  }

  /** Generated token ids of each image (EOS included when it ended on one). */
  async generateIds(inputs: readonly ImageInput[]): Promise<number[][]> {
    const { settings } = await this.resolved();
    return this.eachGroup(inputs, async (decoder) => {
      if (settings.numBeams > 1) return beamSearch(decoder, settings);
      const results = await greedySearch(decoder, settings, (ids) => this.decodeText(ids));
      return results.map((r) => r.tokenIds);
    });
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<ImageToTextOutput[]> {
    const { settings } = await this.resolved();
    const texts = await this.eachGroup(inputs, async (decoder) => {
      if (settings.numBeams > 1) {
        const ids = await beamSearch(decoder, settings);
        return Promise.all(ids.map((row) => this.decodeText(row)));
      }
      const results = await greedySearch(decoder, settings, (ids) => this.decodeText(ids));
      return results.map((r) => r.text);
    });
    return texts.map((generatedText) => ({ generatedText }));
  }

  async assertStepwise(): Promise<void> {
    await this.ready();
    assertStepwiseSettings(TASK, (await this.resolved()).settings);
  }

  /** One request's image for the generative engine (stepwise.ts). */
  async prepareInput(input: unknown): Promise<PixelValues> {
    if (typeof input !== 'string' && !(input instanceof Uint8Array)) {
      throw new InputError(
        `${TASK}: the input must be an image (base64 or a path, or the record's bytes)`,
        { field: 'input' },
      );
    }
    return preprocessImage(await decodeImage(input, 'input'), this.preprocessor);
  }

  /** The encoder over prepared images; a caption has no text prompt (`promptTokens` 0). */
  async startCohort(pixels: readonly PixelValues[]): Promise<GenerationCohort> {
    const { settings } = await this.resolved();
    const groups = pixelGroups(pixels);
    const [group] = groups;
    if (group === undefined || groups.length > 1) {
      throw new InputError(
        `${TASK}: the images of one step have different sizes after preprocessing; ` +
          "this model runs without the generative engine (remove the pipeline's generative block)",
        { field: 'input' },
      );
    }
    const run: RunSession = (session, feeds, outputNames) =>
      this.infer(feeds, outputNames, session);
    const encoder = await runEncoder(this.layout, { [this.inputName]: group.tensor }, run);
    const decoder = new Seq2SeqDecoder(this.layout, encoder, run);
    return seq2seqCohort(
      decoder,
      settings,
      pixels.map(() => 0),
    );
  }

  /** Python's postprocess: decode(ids, skip_special_tokens=True). */
  decodeText(ids: readonly number[]): Promise<string> {
    return this.tokenizer.decode(ids, true);
  }

  /**
   * Runs the encoder once per group of same-size images (one group unless the processor keeps
   * each image's own size) and `generate` over its decoder; results come back in input order.
   */
  private async eachGroup<T>(
    inputs: readonly ImageInput[],
    generate: (decoder: Seq2SeqDecoder) => Promise<T[]>,
  ): Promise<T[]> {
    const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
    const pixels = images.map((image) => preprocessImage(image, this.preprocessor));
    const run: RunSession = (session, feeds, outputNames) =>
      this.infer(feeds, outputNames, session);
    const results: T[] = new Array<T>(inputs.length);
    for (const group of pixelGroups(pixels)) {
      const encoder = await runEncoder(this.layout, { [this.inputName]: group.tensor }, run);
      const outputs = await generate(new Seq2SeqDecoder(this.layout, encoder, run));
      group.indices.forEach((index, i) => {
        results[index] = outputs[i] as T;
      });
    }
    return results;
  }
}

export const imageToTextTask: TaskDefinition = {
  needs: { tokenizer: true, preprocessor: true, graphs: 'encoderDecoder' },
  task: TASK,
  execution: 'cohort',
  optionsSchema: imageToTextOptionsSchema,
  create: (model, options) => new ImageToTextPipeline(model, options as ImageToTextOptions),
  pythonOutput: (result) => [{ generated_text: generatedText(result, 'generatedText') }],
  ...imageInput,
};
