// Visual question answering as transformers 4.x's pipeline did it for classifier models (ViLT):
// the question tokenized alone, the image through the model's image processor, one forward pass,
// a sigmoid per answer and the best topK answers (default 5, capped at the number of answers).
// transformers 5 removed the pipeline; the goldens come from its steps in scripts/models/kit/vilt.py.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InputError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { logitsOf, rankLabels } from '../runtime/label-scores.ts';
import { row, textFeeds } from '../runtime/tensors.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';
import {
  isObject,
  UNIT_COST,
  type InputCheck,
  type TaskDefinition,
  logitsNeed,
} from '../task-definition.ts';
import { imageFeeds, sameSizeGroups, type PreparedImage } from '../vision/image-batch.ts';
import { decodeImage, type ImageInput } from '../vision/image-decode.ts';
import { preprocessImage } from '../vision/image-preprocess.ts';
import {
  compileViltPreprocessor,
  viltPreprocessorFor,
  type ViltPreprocessor,
} from './vilt-preprocess.ts';

export const visualQuestionAnsweringOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** How many answers to return, best first (Python's default 5; capped at the answers there are). */
      topK: z.number().int().min(1).default(5),
      /**
       * Cut a question longer than the model reads to its length. Python's default (false) fails
       * such a question; so does this pipeline, with an InputError naming the limit.
       */
      truncation: z.boolean().default(false),
    })
    .strict(),
);

export type VisualQuestionAnsweringOptions = z.input<
  typeof visualQuestionAnsweringOptionsSchema.schema
>;

export interface VisualQuestionAnsweringInput {
  image: ImageInput;
  question: string;
}

export interface VisualAnswer {
  score: number;
  answer: string;
}

const TASK = 'visualQuestionAnswering';

export class VisualQuestionAnsweringPipeline extends BasePipeline<
  VisualQuestionAnsweringInput,
  VisualAnswer[],
  typeof visualQuestionAnsweringOptionsSchema.schema
> {
  private readonly preprocessor: ViltPreprocessor;
  private readonly maxTokens: number | undefined;

  constructor(model: LoadedModel, options: VisualQuestionAnsweringOptions = {}) {
    super(TASK, model, visualQuestionAnsweringOptionsSchema, options);
    this.preprocessor = compileViltPreprocessor(model.preprocessor, model.folder);
    this.maxTokens = model.config.maxPositionEmbeddings ?? this.tokenizer.maxLength;
  }

  protected async runBatch(
    inputs: readonly VisualQuestionAnsweringInput[],
  ): Promise<VisualAnswer[][]> {
    const examples = inputs.map(toExample);
    const images = await Promise.all(
      examples.map(async (example, i): Promise<PreparedImage> => {
        const original = await decodeImage(example.image, `inputs[${i}].image`);
        const p = viltPreprocessorFor(this.preprocessor, original.height, original.width);
        return { original, ...preprocessImage(original, p) };
      }),
    );
    const encoded = await this.encode(
      examples.map((e) => e.question),
      this.options.truncation ? {} : { truncation: false },
    );
    encoded.forEach((encoding, i) => this.checkLength(encoding, i));
    const results = new Array<VisualAnswer[]>(inputs.length);
    // Images of one size share a run; their questions are padded to the longest among them.
    for (const group of sameSizeGroups(images)) {
      const outputs = await this.infer({
        ...textFeeds(
          group.map((i) => encoded[i] as TokenizedText),
          this.model.inputNames,
          this.tokenizer.padId,
        ),
        ...imageFeeds(
          group.map((i) => images[i] as PreparedImage),
          this.model.inputNames,
        ),
      });
      const logits = logitsOf(this.model, outputs);
      group.forEach((index, b) => {
        results[index] = rankLabels(this.model, row(logits, b), 'sigmoid', this.options.topK).map(
          ({ label, score }) => ({ score, answer: label }),
        );
      });
    }
    return results;
  }

  private checkLength(encoding: TokenizedText, index: number): void {
    if (this.maxTokens === undefined || encoding.ids.length <= this.maxTokens) return;
    throw new InputError(
      `${TASK}: inputs[${index}].question is ${encoding.ids.length} tokens, over the ${this.maxTokens} the model reads; shorten it or set options.truncation: true`,
      { field: `inputs[${index}].question` },
    );
  }
}

function toExample(input: unknown, index: number): VisualQuestionAnsweringInput {
  const field = `inputs[${index}]`;
  if (!isObject(input))
    throw new InputError(`${TASK}: ${field} must be {image, question}`, { field });
  if (typeof input['question'] !== 'string')
    throw new InputError(`${TASK}: ${field}.question must be a string`, {
      field: `${field}.question`,
    });
  if (input['image'] === undefined || input['image'] === null)
    throw new InputError(`${TASK}: ${field}.image is missing`, { field: `${field}.image` });
  // decodeImage names what is wrong with the image itself.
  return { image: input['image'] as ImageInput, question: input['question'] };
}

export const visualQuestionAnsweringTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    preprocessor: true,
    labels: true,
    outputs: [logitsNeed(2, 'answer logits [batch, answers]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return visualQuestionAnsweringOptionsSchema.schema;
  },
  create: (model, options) =>
    new VisualQuestionAnsweringPipeline(model, options as VisualQuestionAnsweringOptions),
  // The route reads `image` itself (src/route/image-input.ts, held to the image limits); the
  // question is held to limits.maxTextLength here.
  inputSchema(input: unknown, check: InputCheck): void {
    if (
      !isObject(input) ||
      typeof input['question'] !== 'string' ||
      !(typeof input['image'] === 'string' || input['image'] instanceof Uint8Array)
    )
      check.fail('{image, question}: the image in base64 (or a path), the question a string');
    check.text(input['question'], `${check.field}.question`);
  },
  inputKind: 'imageText',
  // Every image is one row beside its question's tokens.
  cost: async (input, meter) =>
    isObject(input) && typeof input['question'] === 'string'
      ? { tokens: Math.min(await meter.length(input['question']), meter.maxTokens), rows: 1 }
      : UNIT_COST,
};
