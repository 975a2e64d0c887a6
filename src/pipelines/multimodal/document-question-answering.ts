// Document question answering with LayoutLM (v1) as Python's document-question-answering pipeline
// runs it when the words and boxes come with the input (`word_boxes`, so no OCR): the question's
// words and the document's words encoded as a split-into-words pair, cut into overlapping windows,
// each token given its word's box (the question and CLS [0,0,0,0], SEP [1000,1000,1000,1000]),
// spans scored per window as extractive question answering scores them, and the best answers over
// all windows returned as the words they cover with their first and last word index.
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row, textFeeds } from '../runtime/tensors.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';
import {
  isObject,
  UNIT_COST,
  type InputCheck,
  type InputCost,
  type TaskDefinition,
  SPAN_LOGITS,
} from '../task-definition.ts';
import { bestSpans } from '../text/qa-spans.ts';
import { contextWindows } from '../text/qa-windows.ts';
import { toWordDocument, type Box, type WordDocument } from './word-boxes.ts';
import { WordPairEncoder } from './word-encoding.ts';

export const documentQuestionAnsweringOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** How many answers to return per input, best first (Python's default 1). */
      topK: z.number().int().min(1).default(1),
      /** Longest answer, in tokens (Python's max_answer_len). */
      maxAnswerLength: z.number().int().min(1).default(15),
      /** Adds the "no answer" candidate: the CLS score, an empty answer at words 0..0. */
      handleImpossibleAnswer: z.boolean().default(false),
      /**
       * Tokens per window (question, words and special tokens); default the tokenizer's limit
       * (Python's max_seq_len).
       */
      maxSeqLength: z.number().int().min(1).optional(),
      /** Overlap between windows, in tokens; default min(maxSeqLength / 2, 256) as in Python. */
      docStride: z.number().int().min(0).optional(),
    })
    .strict(),
);

export type DocumentQuestionAnsweringOptions = z.input<
  typeof documentQuestionAnsweringOptionsSchema.schema
>;

/** Python's `word_boxes`: each word with its [x0, y0, x1, y1] box on the 0-1000 page grid. */
export interface DocumentQuestionAnsweringInput {
  question: string;
  wordBoxes: [string, [number, number, number, number]][];
}

/** `start` and `end` index the first and last word of the answer in wordBoxes. */
export interface DocumentAnswer {
  score: number;
  answer: string;
  start: number;
  end: number;
}

const TASK = 'documentQuestionAnswering';
// LayoutLM's position tables: 1024 rows unless the config says otherwise.
const DEFAULT_MAX_2D = 1024;
const SEP_BOX: Box = [1000, 1000, 1000, 1000];
const NO_BOX: Box = [0, 0, 0, 0];

export class DocumentQuestionAnsweringPipeline extends BasePipeline<
  DocumentQuestionAnsweringInput,
  DocumentAnswer[],
  typeof documentQuestionAnsweringOptionsSchema.schema
> {
  private readonly encoder: WordPairEncoder;
  private readonly maxSeqLength: number;
  private readonly docStride: number;
  private readonly maxCoordinate: number;

  constructor(model: LoadedModel, options: DocumentQuestionAnsweringOptions = {}) {
    super(TASK, model, documentQuestionAnsweringOptionsSchema, options);
    if (!model.inputNames.includes('bbox'))
      throw new InferenceError(
        `${TASK} needs a LayoutLM model that takes word boxes (a 'bbox' input); ${model.folder} takes ${model.inputNames.join(', ')}`,
      );
    for (const name of ['start_logits', 'end_logits'])
      if (!model.outputNames.includes(name))
        throw new InferenceError(
          `${TASK} needs start_logits and end_logits; ${model.folder} gives ${model.outputNames.join(', ')}`,
        );
    this.encoder = new WordPairEncoder(this.tokenizer.json);
    this.maxSeqLength =
      this.options.maxSeqLength ??
      this.tokenizer.maxLength ??
      model.config.maxPositionEmbeddings ??
      512;
    this.docStride = this.options.docStride ?? Math.min(Math.floor(this.maxSeqLength / 2), 256);
    const declared = model.config.raw['max_2d_position_embeddings'];
    this.maxCoordinate = typeof declared === 'number' ? declared : DEFAULT_MAX_2D;
  }

  protected async runBatch(
    inputs: readonly DocumentQuestionAnsweringInput[],
  ): Promise<DocumentAnswer[][]> {
    const documents = inputs.map((input, i) =>
      toWordDocument(input, `inputs[${i}]`, TASK, this.maxCoordinate),
    );
    const full = await Promise.all(
      documents.map((d) => this.encoder.encode(d.questionWords, d.words)),
    );
    const windows = full.map((encoding, i) =>
      contextWindows(encoding, this.maxSeqLength, this.docStride, `inputs[${i}]`, TASK),
    );
    const flat = windows.flat();
    const sepId = this.tokenizer.tokenId(this.tokenizer.special.sep);
    const owners = windows.flatMap((own, i) => own.map(() => documents[i] as WordDocument));
    const outputs = await this.infer({
      ...textFeeds(flat, this.model.inputNames, this.tokenizer.padId),
      bbox: boxFeed(flat, owners, sepId),
    });
    const starts = floatOutput(outputs, 'start_logits');
    const ends = floatOutput(outputs, 'end_logits');
    let next = 0;
    return documents.map((document, i) => {
      const own = windows[i] ?? [];
      const first = next;
      next += own.length;
      return this.answersFor(
        document,
        own.map((window, w) => ({
          window,
          start: row(starts, first + w),
          end: row(ends, first + w),
        })),
      );
    });
  }

  private answersFor(
    document: WordDocument,
    windows: { window: TokenizedText; start: Float32Array; end: Float32Array }[],
  ): DocumentAnswer[] {
    const { topK, maxAnswerLength, handleImpossibleAnswer } = this.options;
    const clsId = this.tokenizer.tokenId(this.tokenizer.special.cls);
    let nullScore = 1e6;
    const answers: DocumentAnswer[] = [];
    for (const { window, start, end } of windows) {
      // Python unmasks every CLS token (the "no answer" position) and masks the rest but words.
      const undesired = window.sequenceIds.map(
        (sequence, t) => sequence !== 1 && window.ids[t] !== clsId,
      );
      const found = clsId === undefined ? -1 : window.ids.indexOf(clsId);
      const clsIndex = Math.max(found, 0);
      const result = bestSpans(start, end, undesired, clsIndex, topK, maxAnswerLength);
      nullScore = Math.min(nullScore, result.nullScore);
      for (const span of result.spans) {
        const from = window.wordIds[span.start];
        const to = window.wordIds[span.end];
        if (from == null || to == null) continue;
        answers.push({
          score: span.score,
          answer: document.words.slice(from, to + 1).join(' '),
          start: from,
          end: to,
        });
      }
    }
    if (handleImpossibleAnswer) answers.push({ score: nullScore, answer: '', start: 0, end: 0 });
    // Stable, like Python's sorted: equal scores keep window order, the null answer last.
    answers.sort((a, b) => b.score - a.score);
    return answers.slice(0, topK);
  }
}

/** Each token's box: a word token its word's, SEP the page's far corner, the rest zeros. */
export function windowBoxes(
  window: TokenizedText,
  boxes: readonly Box[],
  sepId: number | undefined,
): Box[] {
  return window.ids.map((id, t) => {
    const word = window.wordIds[t];
    if (window.sequenceIds[t] === 1 && word != null) return boxes[word] ?? NO_BOX;
    return id === sepId ? SEP_BOX : NO_BOX;
  });
}

/** bbox [rows, tokens, 4], padding rows with zero boxes. */
function boxFeed(
  windows: readonly TokenizedText[],
  documents: readonly WordDocument[],
  sepId: number | undefined,
): Tensor {
  const width = windows.reduce((max, w) => Math.max(max, w.ids.length), 0);
  const data = new BigInt64Array(windows.length * width * 4);
  windows.forEach((window, r) => {
    const boxes = windowBoxes(window, (documents[r] as WordDocument).boxes, sepId);
    boxes.forEach((box, t) => {
      for (let k = 0; k < 4; k += 1) data[(r * width + t) * 4 + k] = BigInt(box[k] as number);
    });
  });
  return new Tensor('int64', data, [windows.length, width, 4]);
}

function documentCost(input: Record<string, unknown>): { question: string; words: string } {
  const boxes = Array.isArray(input['wordBoxes']) ? (input['wordBoxes'] as unknown[]) : [];
  const words = boxes.map((item) =>
    Array.isArray(item) && typeof item[0] === 'string' ? item[0] : '',
  );
  return { question: String(input['question']), words: words.join(' ') };
}

export const documentQuestionAnsweringTask: TaskDefinition = {
  needs: { tokenizer: true, inputs: ['bbox'], outputs: SPAN_LOGITS },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return documentQuestionAnsweringOptionsSchema.schema;
  },
  create: (model, options) =>
    new DocumentQuestionAnsweringPipeline(model, options as DocumentQuestionAnsweringOptions),
  // The word and box checks that need the model (its grid size) run in the pipeline.
  inputSchema(input: unknown, check: InputCheck): void {
    if (
      !isObject(input) ||
      typeof input['question'] !== 'string' ||
      !Array.isArray(input['wordBoxes'])
    )
      check.fail('{question, wordBoxes}: a string and [word, [x0, y0, x1, y1]] pairs');
    check.text(input['question'], `${check.field}.question`);
    const items = input['wordBoxes'] as unknown[];
    check.list(items, `${check.field}.wordBoxes`);
    items.forEach((item, i) => {
      if (Array.isArray(item) && typeof item[0] === 'string')
        check.text(item[0], `${check.field}.wordBoxes[${i}][0]`);
    });
  },
  inputKind: 'text',
  // A long document is cut into overlapping windows, each a row of the batch.
  async cost(input, meter): Promise<InputCost> {
    if (!isObject(input) || typeof input['question'] !== 'string') return UNIT_COST;
    const { question, words } = documentCost(input);
    const [q, passage] = await Promise.all([meter.length(question), meter.length(words)]);
    const window = Number(meter.options['maxSeqLength'] ?? meter.maxTokens);
    const room = Math.max(1, window - q - 3);
    const stride = Number(meter.options['docStride'] ?? Math.min(Math.floor(window / 2), 256));
    const rows = passage <= room ? 1 : 1 + Math.ceil((passage - room) / Math.max(1, room - stride));
    return { tokens: Math.min(q + passage + 3, window), rows };
  },
};
