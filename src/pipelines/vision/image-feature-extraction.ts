// Image embeddings from a vision encoder (ViT, a CLIP vision tower, ...), as Python's
// image-feature-extraction pipeline gives them: every token's hidden state by default, or the
// model's pooled output; the first token (CLS) and the token mean are ours, for encoders whose
// pooled output is not the embedding wanted.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { l2Normalize } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, type FloatOutput } from '../runtime/tensors.ts';
import { isObject, sizeIn, type TaskDefinition } from '../task-definition.ts';
import { bySize, imageFeeds, prepareImages } from './image-batch.ts';
import type { ImageInput } from './image-decode.ts';
import { compilePreprocessor, type ImagePreprocessor } from './image-preprocess.ts';
import { imageInput } from './image-task.ts';

export const imageFeatureExtractionOptionsSchema = lazySchema((z) =>
  z
    .object({
      /**
       * 'none': every token's vector (Python's default, pool=False); 'pooled': the model's
       * pooler_output (Python's pool=True); 'cls': the first token; 'mean': the mean over tokens.
       */
      pooling: z.enum(['none', 'pooled', 'cls', 'mean']).default('none'),
      /** L2-normalise each vector. */
      normalize: z.boolean().default(false),
      /** Which output holds the hidden states; default last_hidden_state, else the first output. */
      outputName: z.string().optional(),
    })
    .strict(),
);

export type ImageFeatureExtractionOptions = z.input<
  typeof imageFeatureExtractionOptionsSchema.schema
>;
/** One vector per image when pooled; one per token when pooling is 'none'. */
export type ImageFeatures = Float32Array | Float32Array[];

const TASK = 'imageFeatureExtraction';

export class ImageFeatureExtractionPipeline extends BasePipeline<
  ImageInput,
  ImageFeatures,
  typeof imageFeatureExtractionOptionsSchema.schema
> {
  private readonly preprocessor: ImagePreprocessor;
  private readonly outputName: string;

  constructor(model: LoadedModel, options: ImageFeatureExtractionOptions = {}) {
    super(TASK, model, imageFeatureExtractionOptionsSchema, options, { tokenizer: false });
    this.preprocessor = compilePreprocessor(model.preprocessor, model.folder);
    const pooled = this.options.pooling === 'pooled';
    const fallback = pooled ? 'pooler_output' : 'last_hidden_state';
    const wanted =
      this.options.outputName ??
      (model.outputNames.includes(fallback) || pooled ? fallback : model.outputNames[0]);
    if (wanted === undefined || !model.outputNames.includes(wanted))
      throw new InferenceError(
        `${model.onnxPath} has no output '${String(wanted)}' (outputs: ${model.outputNames.join(', ')})` +
          (pooled ? "; pooling 'pooled' needs a model exported with its pooler" : ''),
      );
    this.outputName = wanted;
  }

  protected async runBatch(inputs: readonly ImageInput[]): Promise<ImageFeatures[]> {
    const images = await prepareImages(inputs, this.preprocessor);
    return bySize(images, async (group) => {
      const outputs = await this.infer(imageFeeds(group, this.model.inputNames), [this.outputName]);
      const hidden = floatOutput(outputs, this.outputName);
      return group.map((_, b) => this.features(hidden, b));
    });
  }

  private features(hidden: FloatOutput, b: number): ImageFeatures {
    const { pooling, normalize } = this.options;
    const finish = (v: Float32Array): Float32Array => (normalize ? l2Normalize(v) : v);
    const dims = hidden.dims;
    // pooler_output is one vector per image; the hidden states are one per token.
    const perImage = dims.length === 2;
    if (perImage !== (pooling === 'pooled'))
      throw new InferenceError(
        `${TASK}: pooling '${pooling}' needs ${perImage ? 'per-token hidden states' : 'a pooled output'}, and output '${this.outputName}' has dims [${dims.join(', ')}]`,
      );
    if (perImage) {
      const width = dims[1] ?? 0;
      return finish(hidden.data.slice(b * width, (b + 1) * width));
    }
    const tokens = dims[1] ?? 0;
    const width = dims[2] ?? 0;
    const base = b * tokens * width;
    const token = (t: number): Float32Array =>
      hidden.data.slice(base + t * width, base + (t + 1) * width);
    if (pooling === 'none') return Array.from({ length: tokens }, (_, t) => finish(token(t)));
    if (pooling === 'cls') return finish(token(0));
    const mean = new Float32Array(width);
    for (let t = 0; t < tokens; t += 1)
      for (let d = 0; d < width; d += 1)
        mean[d] = (mean[d] ?? 0) + (hidden.data[base + t * width + d] ?? 0);
    return finish(mean.map((v) => v / tokens));
  }
}

export const imageFeatureExtractionTask: TaskDefinition = {
  needs: { preprocessor: true },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return imageFeatureExtractionOptionsSchema.schema;
  },
  create: (model, options) =>
    new ImageFeatureExtractionPipeline(model, options as ImageFeatureExtractionOptions),
  // Python keeps the batch dimension of 1 on each image's features.
  pythonOutput: (result) => [result],
  // A vision model's own width, or its vision tower's in a two-tower (CLIP-style) config; an
  // output chosen by name (projected image_embeds) may be any width.
  vectorSize: (config, options) => {
    if (options['outputName'] !== undefined) return undefined;
    const vision = config['vision_config'];
    return (
      sizeIn(config, ['hidden_size']) ??
      (isObject(vision) ? sizeIn(vision, ['hidden_size']) : undefined)
    );
  },
  ...imageInput,
};
