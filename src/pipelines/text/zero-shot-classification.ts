// Zero-shot classification with an NLI model, as transformers' ZeroShotClassificationPipeline:
// each (sequence, "This example is <label>.") pair is one premise/hypothesis row, and the
// entailment logits of a sequence's rows become its label scores.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InputError } from '../../errors.ts';
import { softmax } from '../runtime/math.ts';
import { logitsOf } from '../runtime/label-scores.ts';
import { checkCandidateLabels, labelsOf, pythonFormat } from '../runtime/candidate-labels.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { assertString } from '../pipeline.ts';
import { row } from '../runtime/tensors.ts';
import { textInput, type TaskDefinition, logitsNeed } from '../task-definition.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';

const TASK = 'zeroShotClassification';

export const zeroShotClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** The labels to score; a string is split on commas, as Python does. Required. */
      candidateLabels: z.union([z.array(z.string()), z.string()]),
      /** Turns a label into the NLI hypothesis; `{}` is replaced by the label (Python format). */
      hypothesisTemplate: z.string().default('This example is {}.'),
      /** false: scores are a softmax across labels (sum to 1); true: each label on its own. */
      multiLabel: z.boolean().default(false),
    })
    .strict()
    .superRefine(checkCandidateLabels(TASK)),
);

export type ZeroShotClassificationOptions = z.input<
  typeof zeroShotClassificationOptionsSchema.schema
>;

export interface ZeroShotResult {
  sequence: string;
  /** Best first. */
  labels: string[];
  scores: number[];
}

export class ZeroShotClassificationPipeline extends BasePipeline<
  string,
  ZeroShotResult,
  typeof zeroShotClassificationOptionsSchema.schema
> {
  private readonly labels: string[];
  private readonly hypotheses: string[];
  private readonly multiLabel: boolean;
  private readonly entailmentId: number;

  constructor(model: LoadedModel, options: ZeroShotClassificationOptions) {
    super(TASK, model, zeroShotClassificationOptionsSchema, options);
    const parsed = this.options;
    // The schema made sure there is a label and the template has a place for it.
    this.labels = labelsOf(parsed.candidateLabels);
    this.hypotheses = this.labels.map((label) => pythonFormat(parsed.hypothesisTemplate, label));
    this.multiLabel = parsed.multiLabel;
    this.entailmentId = entailmentIdOf(model);
  }

  protected async runBatch(inputs: readonly string[]): Promise<ZeroShotResult[]> {
    inputs.forEach((input, i) => {
      assertString(input, TASK, `inputs[${i}]`);
      // Python refuses an empty sequence ("at least one label and at least one sequence").
      if (input.length === 0)
        throw new InputError(`${TASK}: inputs[${i}] is empty; give a sequence to classify`, {
          field: `inputs[${i}]`,
        });
    });
    const pairs = inputs.flatMap((sequence) =>
      this.hypotheses.map((hypothesis) => [sequence, hypothesis] as const),
    );
    const encoded = await Promise.all(pairs.map((pair) => this.encodePair(pair)));
    const logits = logitsOf(this.model, await this.inferText(encoded));
    const n = this.labels.length;
    return inputs.map((sequence, s) => {
      const rows = this.labels.map((_, l) => row(logits, s * n + l));
      return this.result(sequence, rows);
    });
  }

  /**
   * Only the sequence is truncated so the hypothesis stays whole. When the hypothesis alone is
   * too long for that, Python catches the tokenizer's "too short" error and does not truncate.
   */
  private async encodePair(pair: readonly [string, string]): Promise<TokenizedText> {
    try {
      const [encoding] = await this.encode([pair], { truncation: 'only_first' });
      return encoding as TokenizedText;
    } catch (cause) {
      if (!String(cause).includes('too short')) throw cause;
      const [encoding] = await this.encode([pair], { truncation: false });
      return encoding as TokenizedText;
    }
  }

  private result(sequence: string, rows: readonly Float32Array[]): ZeroShotResult {
    let scores: number[];
    if (this.multiLabel || rows.length === 1) {
      // Entailment against contradiction for each label on its own.
      const entail = this.entailmentId;
      const contradiction = entail === 0 ? -1 : 0;
      scores = rows.map((logits) => {
        const pair = [pythonIndex(logits, contradiction), pythonIndex(logits, entail)];
        return softmax(pair)[1] as number;
      });
    } else {
      scores = softmax(rows.map((logits) => pythonIndex(logits, this.entailmentId)));
    }
    // Python reverses a stable ascending sort of float32 scores: among equal scores the later
    // label comes first.
    const order = scores
      .map((_, i) => i)
      .sort((a, b) => Math.fround(scores[b] as number) - Math.fround(scores[a] as number) || b - a);
    return {
      sequence,
      labels: order.map((i) => this.labels[i] as string),
      scores: order.map((i) => scores[i] as number),
    };
  }
}

/**
 * Python's `entailment_id`: the first label in label2id that starts with "entail", else -1
 * (which Python then uses as "the last class").
 */
function entailmentIdOf(model: LoadedModel): number {
  const label2id = model.config.raw['label2id'];
  const entries: [string, number][] =
    label2id !== null && typeof label2id === 'object'
      ? Object.entries(label2id as Record<string, unknown>).map(([label, id]) => [
          label,
          Number(id),
        ])
      : model.config.labels.map((label, id) => [label, id]);
  const found = entries.find(([label]) => label.toLowerCase().startsWith('entail'));
  return found === undefined ? -1 : found[1];
}

/** numpy indexing: a negative index counts from the end. */
function pythonIndex(values: Float32Array, index: number): number {
  return values[index < 0 ? values.length + index : index] ?? Number.NaN;
}

export const zeroShotClassificationTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    inputs: ['input_ids'],
    labels: true,
    outputs: [logitsNeed(2, 'NLI logits [batch, labels]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return zeroShotClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new ZeroShotClassificationPipeline(model, options as ZeroShotClassificationOptions),
  inputSchema: textInput.inputSchema,
  inputKind: 'text',
  async cost(input, meter) {
    if (typeof input !== 'string') return textInput.cost(input, meter);
    // One premise/hypothesis row per label; the hypothesis adds a handful of tokens to each.
    const labels = meter.options['candidateLabels'];
    const rows = Array.isArray(labels)
      ? labels.length
      : typeof labels === 'string'
        ? labels.split(',').length
        : 1;
    return {
      tokens: Math.min((await meter.length(input)) + 8, meter.maxTokens),
      rows: Math.max(rows, 1),
    };
  },
};
