// Table question answering with TAPAS as transformers' table-question-answering pipeline runs it:
// the question and the table encoded as TapasTokenizer encodes them (tapas-encoding.ts), one
// forward pass, the cells whose tokens' mean probability passes 0.5 and, for models with an
// aggregation head, the operator (NONE / SUM / AVERAGE / COUNT for WTQ-style models) before the
// answer. A list of queries on one table gives one answer per query; `sequential` feeds each
// query the cells the previous one selected (the prev_labels conversational SQA models read).
import { Tensor } from '../../runtime/tensor.ts';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InferenceError, InputError } from '../../errors.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { requireTokenizer } from '../pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { floatOutput, row } from '../runtime/tensors.ts';
import {
  isObject,
  UNIT_COST,
  type InputCheck,
  type InputCost,
  type TaskDefinition,
} from '../task-definition.ts';
import { TABLE_SHAPE, toTableQuestion, type TableQuestion } from './table-input.ts';
import {
  cellProbabilities,
  selectedCells,
  tableAnswer,
  type Aggregation,
  type TableAnswer,
} from './tapas-answers.ts';
import {
  TapasEncoder,
  TYPE_IDS,
  withPreviousAnswer,
  type TapasEncoding,
} from './tapas-encoding.ts';

export const tableQuestionAnsweringOptionsSchema = lazySchema((z) =>
  z
    .object({
      /**
       * Drop rows from the end of a table too long for the model (Python's default for TAPAS,
       * `drop_rows_to_fit`); false refuses such a table with an InputError.
       */
      truncation: z.boolean().default(true),
      /**
       * For a list of queries on one table: run them one after another, each seeing the cells the
       * previous one selected (Python's `sequential=True`, for SQA models). Default false: every
       * query alone.
       */
      sequential: z.boolean().default(false),
    })
    .strict(),
);

export type TableQuestionAnsweringOptions = z.input<
  typeof tableQuestionAnsweringOptionsSchema.schema
>;

export interface TableQuestionAnsweringInput {
  table: Record<string, string[]> | string[][];
  query: string | string[];
}

export type { TableAnswer } from './tapas-answers.ts';

const TASK = 'tableQuestionAnswering';

interface Job {
  question: TableQuestion;
  /** Which input, which of its queries. */
  input: number;
  query: number;
}

export class TableQuestionAnsweringPipeline extends BasePipeline<
  TableQuestionAnsweringInput,
  TableAnswer | TableAnswer[],
  typeof tableQuestionAnsweringOptionsSchema.schema
> {
  private readonly encoder: TapasEncoder;
  private readonly aggregation: Aggregation | undefined;

  constructor(model: LoadedModel, options: TableQuestionAnsweringOptions = {}) {
    super(TASK, model, tableQuestionAnsweringOptionsSchema, options);
    for (const name of ['input_ids', 'attention_mask', 'token_type_ids'])
      if (!model.inputNames.includes(name))
        throw new InferenceError(
          `${TASK} needs a TAPAS model taking input_ids, attention_mask and token_type_ids; ${model.folder} takes ${model.inputNames.join(', ')}`,
        );
    if (!model.outputNames.includes('logits'))
      throw new InferenceError(
        `${TASK} needs the token logits ('logits'); ${model.folder} gives ${model.outputNames.join(', ')}`,
      );
    this.encoder = tapasEncoder(model);
    this.aggregation = aggregationOf(model);
  }

  protected async runBatch(
    inputs: readonly TableQuestionAnsweringInput[],
  ): Promise<(TableAnswer | TableAnswer[])[]> {
    const questions = inputs.map((input, i) => toTableQuestion(input, `inputs[${i}]`));
    const jobs = questions.flatMap((question, input) =>
      question.queries.map((_, query): Job => ({ question, input, query })),
    );
    const encodings = await Promise.all(
      jobs.map((job) =>
        this.encoder.encode(job.question.table, job.question.queries[job.query] as string, {
          truncate: this.options.truncation,
          field: `inputs[${job.input}]`,
        }),
      ),
    );
    const answers = questions.map((q) => new Array<TableAnswer>(q.queries.length));
    const answer = (
      job: Job,
      encoding: TapasEncoding,
      logits: Float32Array,
      agg?: Float32Array,
    ): void => {
      (answers[job.input] as TableAnswer[])[job.query] = tableAnswer(
        job.question.table,
        encoding,
        logits,
        this.aggregation && agg ? { logits: agg, spec: this.aggregation } : undefined,
      );
    };
    if (!this.options.sequential) {
      await this.forward(encodings, (i, logits, agg) =>
        answer(jobs[i] as Job, encodings[i] as TapasEncoding, logits, agg),
      );
    } else {
      // Step k runs every input's k-th query together, each with the cells its query k-1 selected.
      const previous = new Map<number, Set<string>>();
      for (let step = 0; jobs.some((j) => j.query === step); step += 1) {
        const indices = jobs.flatMap((j, i) => (j.query === step ? [i] : []));
        const fed = indices.map((i) => {
          const job = jobs[i] as Job;
          const encoding = encodings[i] as TapasEncoding;
          const before = previous.get(job.input);
          return before === undefined ? encoding : withPreviousAnswer(encoding, before);
        });
        await this.forward(fed, (k, logits, agg) => {
          const i = indices[k] as number;
          const job = jobs[i] as Job;
          previous.set(
            job.input,
            selectedCells(cellProbabilities(fed[k] as TapasEncoding, logits)),
          );
          answer(job, fed[k] as TapasEncoding, logits, agg);
        });
      }
    }
    return questions.map((q, i) =>
      q.many ? (answers[i] as TableAnswer[]) : (answers[i]?.[0] as TableAnswer),
    );
  }

  /** One padded run over the encodings; `each` gets every row's logits (and aggregation logits). */
  private async forward(
    encodings: readonly TapasEncoding[],
    each: (index: number, logits: Float32Array, aggregation: Float32Array | undefined) => void,
  ): Promise<void> {
    const outputs = await this.infer(tapasFeeds(encodings, this.tokenizer.padId));
    const logits = floatOutput(outputs, 'logits');
    const aggregation = this.aggregation ? floatOutput(outputs, 'logits_aggregation') : undefined;
    encodings.forEach((_, i) => each(i, row(logits, i), aggregation && row(aggregation, i)));
  }
}

/**
 * The model's TAPAS encoder, from its tokenizer.json and TapasTokenizer's tokenizer_config.json;
 * `maxLength` overrides model_max_length (as TapasTokenizer's max_length argument does).
 */
export function tapasEncoder(model: LoadedModel, maxLength?: number): TapasEncoder {
  const tokenizer = requireTokenizer(model, TASK);
  const config = tokenizer.config;
  for (const [key, unsupported] of [
    ['strip_column_names', config['strip_column_names'] === true],
    [
      'cell_trim_length',
      typeof config['cell_trim_length'] === 'number' && config['cell_trim_length'] >= 0,
    ],
    ['max_question_length', config['max_question_length'] != null],
    ['min_question_length', config['min_question_length'] != null],
  ] as const)
    if (unsupported)
      throw new InferenceError(
        `${TASK}: ${model.folder}'s tokenizer_config.json sets ${key}, which this pipeline does not implement`,
      );
  const modelMax = tokenizer.maxLength ?? model.config.maxPositionEmbeddings ?? 512;
  // TapasTokenizer defaults both id limits to model_max_length.
  const limit = (key: string): number => (typeof config[key] === 'number' ? config[key] : modelMax);
  const special = tokenizer.special;
  return new TapasEncoder(
    tokenizer.json,
    {
      cls: special.cls ?? '[CLS]',
      sep: special.sep ?? '[SEP]',
      unk: special.unk ?? '[UNK]',
      empty: typeof config['empty_token'] === 'string' ? config['empty_token'] : '[EMPTY]',
      others: [special.pad, special.mask].filter((t): t is string => t !== undefined),
    },
    {
      maxLength: maxLength ?? modelMax,
      maxColumnId: limit('max_column_id'),
      maxRowId: limit('max_row_id'),
    },
  );
}

/** input_ids, attention_mask [rows, tokens] and token_type_ids [rows, tokens, 7]; padding is zeros. */
export function tapasFeeds(
  encodings: readonly TapasEncoding[],
  padId: number,
): Record<string, Tensor> {
  const width = encodings.reduce((max, e) => Math.max(max, e.ids.length), 0);
  const n = encodings.length;
  const ids = new BigInt64Array(n * width).fill(BigInt(padId));
  const mask = new BigInt64Array(n * width);
  const types = new BigInt64Array(n * width * TYPE_IDS);
  encodings.forEach((e, r) => {
    e.ids.forEach((id, t) => {
      ids[r * width + t] = BigInt(id);
      mask[r * width + t] = 1n;
      (e.typeIds[t] as number[]).forEach((v, k) => {
        types[(r * width + t) * TYPE_IDS + k] = BigInt(v);
      });
    });
  });
  return {
    input_ids: new Tensor('int64', ids, [n, width]),
    attention_mask: new Tensor('int64', mask, [n, width]),
    token_type_ids: new Tensor('int64', types, [n, width, TYPE_IDS]),
  };
}

/** Python aggregates when the config has both aggregation_labels and num_aggregation_labels > 0. */
function aggregationOf(model: LoadedModel): Aggregation | undefined {
  const raw = model.config.raw;
  const count = raw['num_aggregation_labels'];
  const labels = raw['aggregation_labels'];
  if (typeof count !== 'number' || count <= 0 || !isObject(labels)) return undefined;
  if (!model.outputNames.includes('logits_aggregation'))
    throw new InferenceError(
      `${TASK}: ${model.folder}'s config has an aggregation head but the ONNX model gives no logits_aggregation`,
    );
  const names = Array.from({ length: count }, (_, i) => {
    const label = labels[String(i)];
    return typeof label === 'string' ? label : String(i);
  });
  const none = raw['no_aggregation_label_index'];
  return { labels: names, none: typeof none === 'number' ? none : undefined };
}

export const tableQuestionAnsweringTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    inputs: [
      'input_ids',
      'attention_mask',
      { name: 'token_type_ids', rank: 3, what: "TAPAS's seven token type ids [batch, tokens, 7]" },
    ],
    outputs: [{ names: ['logits'], rank: 2, what: 'cell selection logits [batch, tokens]' }],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return tableQuestionAnsweringOptionsSchema.schema;
  },
  create: (model, options) =>
    new TableQuestionAnsweringPipeline(model, options as TableQuestionAnsweringOptions),
  // The whole shape is checked here, so a ragged table never reaches a batch; the checks that
  // need the model (its row and column limits, the length) run in the pipeline.
  inputSchema(input: unknown, check: InputCheck): void {
    if (!isObject(input)) check.fail(TABLE_SHAPE);
    const { table, queries } = toTableQuestion(input, check.field);
    check.list(queries, `${check.field}.query`);
    queries.forEach((q) => check.text(q, `${check.field}.query`));
    check.list(table.rows, `${check.field}.table`);
    check.list(table.header, `${check.field}.table`);
    [table.header, ...table.rows].forEach((line, r) =>
      line.forEach((cell, c) => check.text(cell, `${check.field}.table: row ${r}, column ${c}`)),
    );
  },
  inputKind: 'text',
  // One row per query, each the question and the flattened table, capped at the model's length.
  async cost(input, meter): Promise<InputCost> {
    try {
      const { table, queries } = toTableQuestion(input, 'input');
      const text = [table.header, ...table.rows].flat().join(' ');
      const longest = queries.reduce((a, b) => (a.length >= b.length ? a : b));
      const tokens = await meter.length(longest, text);
      return { tokens: Math.min(tokens, meter.maxTokens), rows: queries.length };
    } catch (cause) {
      if (cause instanceof InputError) return UNIT_COST;
      throw cause;
    }
  },
};
