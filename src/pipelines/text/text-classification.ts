// Sequence classification with Python's rules for turning logits into scores: softmax for
// single-label models, sigmoid for multi-label or one-logit models, none for regression.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InputError } from '../../errors.ts';
import {
  defaultScoreFunction,
  rankLabels,
  type LabelScore,
  type ScoreFunction,
  logitsOf,
} from '../runtime/label-scores.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { row } from '../runtime/tensors.ts';
import {
  isObject,
  UNIT_COST,
  type TaskDefinition,
  logitsNeed,
  truncatesAtMaxLength,
} from '../task-definition.ts';
import type { TextInput } from '../runtime/text-tokenizer.ts';

export const textClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** Default: chosen from the model config as Python chooses it. */
      functionToApply: z.enum(['softmax', 'sigmoid', 'none']).optional(),
      /** How many labels to return, best first; null returns every label. */
      topK: z.number().int().min(1).nullable().default(1),
      truncation: z.boolean().default(true),
      /** Truncation length (Python's max_length); default the tokenizer's model_max_length. */
      maxLength: z.number().int().min(1).optional(),
    })
    .strict(),
);

export type TextClassificationOptions = z.input<typeof textClassificationOptionsSchema.schema>;
export type { LabelScore };
export type TextClassificationInput = string | { text: string; textPair?: string };

const TASK = 'textClassification';

export class TextClassificationPipeline extends BasePipeline<
  TextClassificationInput,
  LabelScore[],
  typeof textClassificationOptionsSchema.schema
> {
  private readonly apply: ScoreFunction;

  constructor(model: LoadedModel, options: TextClassificationOptions = {}) {
    super(TASK, model, textClassificationOptionsSchema, options);
    this.apply = this.options.functionToApply ?? defaultScoreFunction(model);
  }

  protected async runBatch(inputs: readonly TextClassificationInput[]): Promise<LabelScore[][]> {
    const texts = inputs.map(toTextInput);
    const { truncation, maxLength } = this.options;
    const encoded = await this.encode(texts, {
      truncation: truncation ? 'longest_first' : false,
      ...(maxLength !== undefined ? { maxLength } : {}),
    });
    const logits = logitsOf(this.model, await this.inferText(encoded));
    return texts.map((_, b) =>
      rankLabels(this.model, row(logits, b), this.apply, this.options.topK),
    );
  }
}

function toTextInput(input: TextClassificationInput, index: number): TextInput {
  if (typeof input === 'string') return input;
  if (input !== null && typeof input === 'object' && typeof input.text === 'string') {
    // Python's tokenizer drops a falsy text_pair, so an empty pair encodes the text alone.
    if (input.textPair === undefined || input.textPair === '') return input.text;
    if (typeof input.textPair === 'string') return [input.text, input.textPair];
  }
  throw new InputError(
    `${TASK}: inputs[${index}] must be a string or {text, textPair?} of strings`,
    { field: `inputs[${index}]` },
  );
}

export const textClassificationTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    inputs: ['input_ids'],
    labels: true,
    outputs: [logitsNeed(2, 'one row of class logits per text [batch, labels]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return textClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new TextClassificationPipeline(model, options as TextClassificationOptions),
  // A single text truncates; a pair is an object, held to the limit as it is.
  cutsLongText: (options) => options['truncation'] !== false,
  // Priced at the length it runs, or a cut text looks several times its size.
  truncatesAt: truncatesAtMaxLength,
  // A single text (alone, or with an empty pair, which Python drops); pairs are not carried.
  encodedText(input, options) {
    if (options['truncation'] === false) return undefined;
    if (typeof input === 'string') return input;
    if (!isObject(input) || typeof input['text'] !== 'string') return undefined;
    return input['textPair'] === undefined || input['textPair'] === '' ? input['text'] : undefined;
  },
  inputSchema(input, check) {
    if (typeof input === 'string') return check.text(input);
    if (
      isObject(input) &&
      typeof input['text'] === 'string' &&
      (input['textPair'] === undefined || typeof input['textPair'] === 'string')
    ) {
      check.text(input['text'], `${check.field}.text`);
      if (typeof input['textPair'] === 'string')
        check.text(input['textPair'], `${check.field}.textPair`);
      return;
    }
    check.fail('a string or {text, textPair?}');
  },
  inputKind: 'text',
  async cost(input, meter) {
    if (typeof input === 'string') return { tokens: await meter.length(input), rows: 1 };
    if (!isObject(input) || typeof input['text'] !== 'string') return UNIT_COST;
    const pair =
      typeof input['textPair'] === 'string' && input['textPair'] !== ''
        ? input['textPair']
        : undefined;
    return { tokens: await meter.length(input['text'], pair), rows: 1 };
  },
};
