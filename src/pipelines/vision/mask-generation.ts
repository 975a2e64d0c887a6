// Prompted mask generation with SAM, as SamModel + SamProcessor do it in Python (transformers'
// `mask-generation` pipeline is SAM's automatic grid generator and takes no prompts). Two graphs,
// as Optimum names them: vision_encoder.onnx runs once per batch of images (each resized so its
// longest side is size.longest_edge, normalised, zero-padded to pad_size), and
// prompt_encoder_mask_decoder.onnx runs once per image with all of its prompts. Each prompt's
// low-resolution masks are post-processed as post_process_masks does: bilinear to pad_size, cropped
// to the resized image, bilinear to the original size, then `> maskThreshold`.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { Tensor } from '../../runtime/tensor.ts';
import type { OrtSession } from '../../runtime/session.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { ModelFolderError } from '../../errors.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row, type FloatOutput } from '../runtime/tensors.ts';
import { UNIT_COST, type InputCheck, type TaskDefinition } from '../task-definition.ts';
import { upsamplePlane } from './bilinear-upsample.ts';
import { decodeImage } from './image-decode.ts';
import {
  compilePreprocessor,
  preprocessImage,
  type ImagePreprocessor,
} from './image-preprocess.ts';
import { encodePng } from './png-encode.ts';
import {
  coordinateScale,
  promptFeeds,
  promptProblem,
  toMaskInput,
  type MaskGenerationInput,
} from './sam-prompts.ts';

export const maskGenerationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Python's multimask_output: three candidate masks per prompt, or the single best one. */
      multimaskOutput: z.boolean().default(true),
      /** post_process_masks' mask_threshold: a pixel is in the mask where the logit is above it. */
      maskThreshold: z.number().default(0),
    })
    .strict(),
);

export type MaskGenerationOptions = z.input<typeof maskGenerationOptionsSchema.schema>;

export interface PromptMasks {
  /** PNG, 8-bit grey, the image's size: 255 inside the mask, 0 outside; one per candidate. */
  masks: Uint8Array[];
  /** The model's predicted IoU of each mask (iou_scores), in the same order. */
  scores: number[];
}

const TASK = 'maskGeneration';
const ENCODER = 'vision_encoder';
const DECODER = 'prompt_encoder_mask_decoder';

interface SamPreprocessor {
  base: ImagePreprocessor;
  longestEdge: number;
  padHeight: number;
  padWidth: number;
}

export class MaskGenerationPipeline extends BasePipeline<
  MaskGenerationInput,
  PromptMasks[],
  typeof maskGenerationOptionsSchema.schema
> {
  private readonly preprocessor: SamPreprocessor;
  private readonly encoder: OrtSession;
  private readonly decoder: OrtSession;

  constructor(model: LoadedModel, options: MaskGenerationOptions = {}) {
    super(TASK, model, maskGenerationOptionsSchema, options, { tokenizer: false });
    this.preprocessor = samPreprocessor(model.preprocessor, model.folder);
    const encoder = model.sessions.get(ENCODER);
    const decoder = model.sessions.get(DECODER);
    if (encoder === undefined || decoder === undefined)
      throw new ModelFolderError(
        `${TASK} needs a SAM model split as ${ENCODER}.onnx and ${DECODER}.onnx; ${model.folder} has ${[...model.sessions.keys()].join(', ') || 'neither'}`,
        { field: 'model' },
      );
    this.encoder = encoder;
    this.decoder = decoder;
  }

  protected async runBatch(inputs: readonly MaskGenerationInput[]): Promise<PromptMasks[][]> {
    const examples = inputs.map((input, i) => toMaskInput(TASK, input, i));
    const images = await Promise.all(
      examples.map((e, i) => decodeImage(e.image, `inputs[${i}].image`)),
    );
    const { padHeight, padWidth, longestEdge } = this.preprocessor;
    // Every image is padded to one size, so the whole batch is one encoder run.
    const plane = padHeight * padWidth;
    const pixels = new Float32Array(images.length * 3 * plane);
    const resized = images.map((image, i) => {
      const size = longestEdgeSize(image.height, image.width, longestEdge);
      const p = preprocessImage(image, {
        ...this.preprocessor.base,
        resize: { kind: 'exact', ...size },
      });
      for (let c = 0; c < 3; c += 1)
        for (let y = 0; y < p.height; y += 1)
          pixels.set(
            p.data.subarray((c * p.height + y) * p.width, (c * p.height + y + 1) * p.width),
            (i * 3 + c) * plane + y * padWidth,
          );
      return size;
    });
    const embeddings = floatOutput(
      await this.infer(
        { pixel_values: new Tensor('float32', pixels, [images.length, 3, padHeight, padWidth]) },
        ['image_embeddings'],
        this.encoder,
      ),
      'image_embeddings',
    );
    const results: PromptMasks[][] = [];
    for (const [i, example] of examples.entries()) {
      const image = images[i] as (typeof images)[number];
      const feeds = promptFeeds(example, coordinateScale(image.height, image.width, longestEdge));
      const out = await this.infer(
        {
          image_embeddings: new Tensor('float32', row(embeddings, i), [
            1,
            ...embeddings.dims.slice(1),
          ]),
          input_points: feeds.points,
          input_labels: feeds.labels,
        },
        ['iou_scores', 'pred_masks'],
        this.decoder,
      );
      results.push(
        await this.prompts(
          floatOutput(out, 'iou_scores'),
          floatOutput(out, 'pred_masks'),
          resized[i] as { height: number; width: number },
          image,
        ),
      );
    }
    return results;
  }

  /** iou_scores [1, prompts, 4] and pred_masks [1, prompts, 4, h, w] -> each prompt's masks. */
  private async prompts(
    scores: FloatOutput,
    masks: FloatOutput,
    resized: { height: number; width: number },
    original: { height: number; width: number },
  ): Promise<PromptMasks[]> {
    const [, prompts = 0, tokens = 0, h = 0, w = 0] = masks.dims;
    // Mask token 0 is SAM's single-mask answer; tokens 1-3 its three candidates.
    const picked = this.options.multimaskOutput
      ? Array.from({ length: tokens - 1 }, (_, k) => k + 1)
      : [0];
    const { padHeight, padWidth } = this.preprocessor;
    const out: PromptMasks[] = [];
    for (let p = 0; p < prompts; p += 1) {
      const prompt: PromptMasks = { masks: [], scores: [] };
      for (const token of picked) {
        const start = (p * tokens + token) * h * w;
        const padded = upsamplePlane(
          masks.data.subarray(start, start + h * w),
          h,
          w,
          padHeight,
          padWidth,
        );
        const cropped = new Float32Array(resized.height * resized.width);
        for (let y = 0; y < resized.height; y += 1)
          cropped.set(
            padded.subarray(y * padWidth, y * padWidth + resized.width),
            y * resized.width,
          );
        const full = upsamplePlane(
          cropped,
          resized.height,
          resized.width,
          original.height,
          original.width,
        );
        const binary = new Uint8Array(full.length);
        for (let k = 0; k < full.length; k += 1)
          if ((full[k] as number) > this.options.maskThreshold) binary[k] = 255;
        prompt.masks.push(await encodePng(binary, original.width, original.height, 1));
        prompt.scores.push(scores.data[p * tokens + token] as number);
      }
      out.push(prompt);
    }
    return out;
  }
}

/** SamImageProcessor's _get_preprocess_shape: both sides scaled so the longest is longest_edge, rounded half up. */
export function longestEdgeSize(
  height: number,
  width: number,
  longestEdge: number,
): { height: number; width: number } {
  const scale = longestEdge / Math.max(height, width);
  return { height: Math.trunc(height * scale + 0.5), width: Math.trunc(width * scale + 0.5) };
}

function samPreprocessor(
  raw: Record<string, unknown> | undefined,
  folder: string,
): SamPreprocessor {
  const fail = (field: string, expected: string): never => {
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: ${field} must be ${expected} for ${TASK}`,
      { field },
    );
  };
  const size = raw?.['size'] as Record<string, unknown> | undefined;
  const pad = raw?.['pad_size'] as Record<string, unknown> | undefined;
  const longestEdge = size?.['longest_edge'];
  if (typeof longestEdge !== 'number' || longestEdge < 1) return fail('size', '{longest_edge}');
  const padHeight = pad?.['height'];
  const padWidth = pad?.['width'];
  if (
    typeof padHeight !== 'number' ||
    typeof padWidth !== 'number' ||
    padHeight < longestEdge ||
    padWidth < longestEdge
  )
    return fail('pad_size', '{height, width} at least size.longest_edge');
  if (raw?.['do_resize'] === false || raw?.['do_pad'] === false)
    return fail('do_resize and do_pad', 'true (SAM reads a padded square)');
  // The shared preprocessor resizes, rescales and normalises; SAM's size and padding are set here.
  const base = compilePreprocessor(
    { ...raw, size: { height: longestEdge, width: longestEdge }, pad_size: null, do_pad: false },
    folder,
  );
  return { base, longestEdge, padHeight, padWidth };
}

export const maskGenerationTask: TaskDefinition = {
  needs: { preprocessor: true, graphs: [['vision_encoder', 'prompt_encoder_mask_decoder']] },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return maskGenerationOptionsSchema.schema;
  },
  create: (model, options) => new MaskGenerationPipeline(model, options as MaskGenerationOptions),
  // The route reads `image` itself (src/route/image-input.ts, held to the image limits).
  inputSchema(input: unknown, check: InputCheck): void {
    const problem = promptProblem(input);
    if (problem !== undefined) check.fail(`{image, points?, labels?, boxes?}: ${problem}`);
    const image = (input as Record<string, unknown>)['image'];
    if (!(typeof image === 'string' || image instanceof Uint8Array))
      check.fail('{image, ...}: the image in base64 (or a path), or bytes');
  },
  inputKind: 'imageText',
  // One encoder row per image; the prompts run beside it.
  cost: () => Promise.resolve(UNIT_COST),
};
