// Extractive question answering: finds the span of the context that answers the question. The
// algorithm is the classic one (transformers 4.x and Hugot; transformers 5 dropped the pipeline and
// the goldens come from the reference in scripts/models/kit/qa_reference.py): question first and
// context second, the context cut into overlapping windows, spans scored per window, the best
// spans over all windows mapped back to character offsets in the context.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError, InputError } from '../../errors.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { bestSpans } from './qa-spans.ts';
import { contextWindows } from './qa-windows.ts';
import { floatOutput, row } from '../runtime/tensors.ts';
import { isObject, UNIT_COST, type TaskDefinition, SPAN_LOGITS } from '../task-definition.ts';
import type { TextTokenizer, TokenizedText } from '../runtime/text-tokenizer.ts';

export const questionAnsweringOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** How many answers to return per input, best first. */
      topK: z.number().int().min(1).default(1),
      /** Longest answer, in tokens. */
      maxAnswerLength: z.number().int().min(1).default(15),
      /** Adds the "no answer" candidate (score of CLS as start and end; empty answer at 0..0). */
      handleImpossibleAnswer: z.boolean().default(false),
      /** Overlap between context windows, in tokens; capped at half of maxSeqLength as Python does. */
      docStride: z.number().int().min(0).default(128),
      /** Tokens per window (question, context and special tokens); default the tokenizer's limit. */
      maxSeqLength: z.number().int().min(1).optional(),
      /**
       * Accepted for compatibility: Python only applies it with slow (non-Rust) tokenizers, so with
       * tokenizer.json it changes nothing; a question that leaves no room for context is an error.
       */
      maxQuestionLength: z.number().int().min(1).default(64),
    })
    .strict(),
);

export type QuestionAnsweringOptions = z.input<typeof questionAnsweringOptionsSchema.schema>;
export interface QuestionAnsweringInput {
  question: string;
  context: string;
}
/** `start` and `end` are offsets in Unicode code points into the context, as Python's. */
export interface Answer {
  score: number;
  start: number;
  end: number;
  answer: string;
}

const TASK = 'questionAnswering';

export class QuestionAnsweringPipeline extends BasePipeline<
  QuestionAnsweringInput,
  Answer[],
  typeof questionAnsweringOptionsSchema.schema
> {
  private readonly maxSeqLength: number;
  private readonly docStride: number;
  private readonly startName: string;
  private readonly endName: string;

  constructor(model: LoadedModel, options: QuestionAnsweringOptions = {}) {
    super(TASK, model, questionAnsweringOptionsSchema, options);
    const tokenizer = this.tokenizer;
    // Without a declared limit, 384 is what Python's pipeline used for question answering.
    this.maxSeqLength = this.options.maxSeqLength ?? tokenizer.maxLength ?? 384;
    this.docStride = Math.min(this.options.docStride, Math.floor(this.maxSeqLength / 2));
    this.startName = outputName(model, 'start_logits', 0);
    this.endName = outputName(model, 'end_logits', 1);
  }

  protected async runBatch(inputs: readonly QuestionAnsweringInput[]): Promise<Answer[][]> {
    const examples = inputs.map(toExample);
    const tokenizer = this.tokenizer;
    const full = await this.encode(
      examples.map((e) => [e.question, e.context] as const),
      { truncation: false },
    );
    const windows = full.map((encoding, i) =>
      contextWindows(encoding, this.maxSeqLength, this.docStride, `inputs[${i}]`),
    );
    const flat = windows.flat();
    const outputs = await this.inferText(flat);
    const starts = floatOutput(outputs, this.startName);
    const ends = floatOutput(outputs, this.endName);
    let next = 0;
    return examples.map((example, i) => {
      const own = windows[i] ?? [];
      const first = next;
      next += own.length;
      return this.answersFor(
        example.context,
        own.map((window, w) => ({
          window,
          start: row(starts, first + w),
          end: row(ends, first + w),
        })),
        tokenizer,
      );
    });
  }

  private answersFor(
    context: string,
    windows: { window: TokenizedText; start: Float32Array; end: Float32Array }[],
    tokenizer: TextTokenizer,
  ): Answer[] {
    const { topK, maxAnswerLength, handleImpossibleAnswer } = this.options;
    const clsId = tokenizer.tokenId(tokenizer.special.cls);
    const slicer = codePointSlicer(context);
    let nullScore = 1e6;
    const answers: Answer[] = [];
    for (const { window, start, end } of windows) {
      // Only context tokens can answer; CLS stays eligible for the softmax as "no answer".
      const found = clsId === undefined ? -1 : window.ids.indexOf(clsId);
      const clsIndex = Math.max(found, 0);
      const undesired = window.sequenceIds.map(
        (sequence, t) => (sequence !== 1 || window.attentionMask[t] === 0) && t !== found,
      );
      const result = bestSpans(start, end, undesired, clsIndex, topK, maxAnswerLength);
      nullScore = Math.min(nullScore, result.nullScore);
      for (const span of result.spans) {
        const from = (window.offsets[span.start] as [number, number])[0];
        const to = (window.offsets[span.end] as [number, number])[1];
        answers.push({ score: span.score, start: from, end: to, answer: slicer(from, to) });
      }
    }
    // Array.prototype.sort is stable, like Python's sorted: equal scores keep window order.
    answers.sort((a, b) => b.score - a.score);
    const best = answers.slice(0, topK);
    if (!handleImpossibleAnswer) return best;
    best.push({ score: nullScore, start: 0, end: 0, answer: '' });
    best.sort((a, b) => b.score - a.score);
    return best.slice(0, topK);
  }
}

function toExample(input: unknown, index: number): QuestionAnsweringInput {
  const field = `inputs[${index}]`;
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new InputError(`${TASK}: ${field} must be {question, context}`, { field });
  }
  const { question, context } = input as Record<string, unknown>;
  for (const [name, value] of [
    ['question', question],
    ['context', context],
  ] as const) {
    if (typeof value !== 'string')
      throw new InputError(`${TASK}: ${field}.${name} must be a string`, {
        field: `${field}.${name}`,
      });
    // Python refuses empty questions and contexts the same way.
    if (value === '')
      throw new InputError(`${TASK}: ${field}.${name} cannot be empty`, {
        field: `${field}.${name}`,
      });
  }
  return { question: question as string, context: context as string };
}

/** Slices by code points (Python's string indices); plain slicing when there are no surrogates. */
function codePointSlicer(text: string): (from: number, to: number) => string {
  if (!/[\uD800-\uDFFF]/.test(text)) return (from, to) => text.slice(from, to);
  const units: number[] = [];
  let unit = 0;
  for (const char of text) {
    units.push(unit);
    unit += char.length;
  }
  units.push(unit);
  const at = (point: number): number => units[Math.min(point, units.length - 1)] ?? unit;
  return (from, to) => text.slice(at(from), at(to));
}

function outputName(model: LoadedModel, name: string, position: number): string {
  if (model.outputNames.includes(name)) return name;
  const fallback = model.outputNames[position];
  if (fallback === undefined) {
    throw new InferenceError(
      `${TASK} needs start and end logits; the model's outputs are ${model.outputNames.join(', ')}`,
    );
  }
  return fallback;
}

export const questionAnsweringTask: TaskDefinition = {
  needs: { tokenizer: true, inputs: ['input_ids'], outputs: SPAN_LOGITS },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return questionAnsweringOptionsSchema.schema;
  },
  create: (model, options) =>
    new QuestionAnsweringPipeline(model, options as QuestionAnsweringOptions),
  // transformers' question-answering pipeline answers a single question with the answer itself
  // when it keeps one (top_k=1, its default), and with the list otherwise.
  pythonOutput: (result) => {
    const answers = result as unknown[];
    return answers.length === 1 ? answers[0] : answers;
  },
  inputSchema(input, check) {
    if (
      isObject(input) &&
      typeof input['question'] === 'string' &&
      typeof input['context'] === 'string'
    ) {
      check.text(input['question'], `${check.field}.question`);
      return check.text(input['context'], `${check.field}.context`);
    }
    check.fail('{question, context} strings');
  },
  inputKind: 'text',
  // A long context is cut into overlapping windows, each a row of the batch.
  async cost(input, meter) {
    if (
      !isObject(input) ||
      typeof input['question'] !== 'string' ||
      typeof input['context'] !== 'string'
    )
      return UNIT_COST;
    const [question, passage] = await Promise.all([
      meter.length(input['question']),
      meter.length(input['context']),
    ]);
    const window = Number(meter.options['maxSeqLength'] ?? meter.maxTokens);
    const room = Math.max(1, window - question - 3);
    const stride = Math.min(Number(meter.options['docStride'] ?? 128), Math.floor(window / 2));
    const rows = passage <= room ? 1 : 1 + Math.ceil((passage - room) / Math.max(1, room - stride));
    return { tokens: Math.min(question + passage + 3, window), rows };
  },
};
