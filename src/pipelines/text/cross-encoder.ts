// Reranking with a cross-encoder: each (query, document) pair is one row of a one-logit
// sequence classifier, scored as Python's text-classification pipeline scores a pair (sigmoid
// by default), then the documents come back best first with their original positions.
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { InputError, ModelFolderError } from '../../errors.ts';
import { sigmoid } from '../runtime/math.ts';
import { logitsOf } from '../runtime/label-scores.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { isObject, UNIT_COST, type TaskDefinition, logitsNeed } from '../task-definition.ts';
import { BasePipeline } from '../base-pipeline.ts';
import type { TextInput } from '../runtime/text-tokenizer.ts';

export const crossEncoderOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** 'sigmoid' gives a relevance in (0, 1); 'none' gives the raw logit. */
      functionToApply: z.enum(['sigmoid', 'none']).default('sigmoid'),
      /** Documents scoring below this are left out; null keeps every document. */
      threshold: z.number().nullable().default(null),
      /** Best first (ties keep input order); false keeps the input order. */
      sort: z.boolean().default(true),
      /** At most this many documents per query, after sorting and the threshold. */
      topK: z.number().int().min(1).nullable().default(null),
      /** Truncate pairs longer than the model allows, longest sequence first, as Python. */
      truncation: z.boolean().default(true),
    })
    .strict(),
);

export type CrossEncoderOptions = z.input<typeof crossEncoderOptionsSchema.schema>;

export interface CrossEncoderInput {
  query: string;
  documents: readonly string[];
}

export interface RankedDocument {
  /** Position of the document in the input's `documents`. */
  index: number;
  document: string;
  score: number;
}

const TASK = 'crossEncoder';

export class CrossEncoderPipeline extends BasePipeline<
  CrossEncoderInput,
  RankedDocument[],
  typeof crossEncoderOptionsSchema.schema
> {
  constructor(model: LoadedModel, options: CrossEncoderOptions = {}) {
    super(TASK, model, crossEncoderOptionsSchema, options);
  }

  protected async runBatch(inputs: readonly CrossEncoderInput[]): Promise<RankedDocument[][]> {
    inputs.forEach(assertInput);
    // Python's tokenizer drops an empty second text (`[(text, pair)] if pair else [text]`), so
    // an empty document is scored as the query alone; done the same here to give its score.
    const pairs = inputs.flatMap(({ query, documents }) =>
      documents.map((document): TextInput => (document === '' ? query : [query, document])),
    );
    const scores = pairs.length === 0 ? [] : await this.score(pairs);
    let offset = 0;
    return inputs.map(({ documents }) => {
      const ranked = documents.map((document, index) => ({
        index,
        document,
        score: scores[offset + index] as number,
      }));
      offset += documents.length;
      return this.select(ranked);
    });
  }

  private async score(pairs: readonly TextInput[]): Promise<number[]> {
    const encoded = await this.encode(pairs, {
      truncation: this.options.truncation ? 'longest_first' : false,
    });
    const logits = logitsOf(this.model, await this.inferText(encoded));
    if (logits.dims.at(-1) !== 1) {
      throw new ModelFolderError(
        `${TASK} needs a model with one relevance logit; ${this.model.folder} gives ${logits.dims.at(-1)} (use textClassification for several labels)`,
        { field: 'model' },
      );
    }
    return Array.from(logits.data, (logit) =>
      this.options.functionToApply === 'sigmoid' ? sigmoid(logit) : logit,
    );
  }

  private select(ranked: RankedDocument[]): RankedDocument[] {
    const { threshold, sort, topK } = this.options;
    let kept = threshold === null ? ranked : ranked.filter((d) => d.score >= threshold);
    // Array.prototype.sort is stable, so equal scores keep the documents' input order.
    if (sort) kept = kept.sort((a, b) => b.score - a.score);
    return topK === null ? kept : kept.slice(0, topK);
  }
}

function assertInput(input: unknown, i: number): asserts input is CrossEncoderInput {
  const value = input as Partial<CrossEncoderInput> | null;
  if (
    value === null ||
    typeof value !== 'object' ||
    typeof value.query !== 'string' ||
    !Array.isArray(value.documents)
  ) {
    throw new InputError(`${TASK}: inputs[${i}] must be {query: string, documents: string[]}`, {
      field: `inputs[${i}]`,
    });
  }
  value.documents.forEach((document: unknown, d) => {
    if (typeof document !== 'string')
      throw new InputError(`${TASK}: inputs[${i}].documents[${d}] must be a string`, {
        field: `inputs[${i}].documents[${d}]`,
      });
  });
}

export const crossEncoderTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    inputs: ['input_ids'],
    outputs: [logitsNeed(2, 'one relevance score per pair [batch, 1]')],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return crossEncoderOptionsSchema.schema;
  },
  create: (model, options) => new CrossEncoderPipeline(model, options as CrossEncoderOptions),
  // sentence-transformers' CrossEncoder.rank(query, documents, return_documents=True).
  pythonOutput: (result) =>
    (result as RankedDocument[]).map(({ index, document, score }) => ({
      corpus_id: index,
      score,
      text: document,
    })),
  inputSchema(input, check) {
    if (
      isObject(input) &&
      typeof input['query'] === 'string' &&
      Array.isArray(input['documents']) &&
      input['documents'].every((d) => typeof d === 'string')
    ) {
      check.text(input['query'], `${check.field}.query`);
      const documents = input['documents'];
      check.list(documents, `${check.field}.documents`);
      documents.forEach((d, i) => check.text(d, `${check.field}.documents[${i}]`));
      return;
    }
    check.fail('{query, documents: string[]}');
  },
  inputKind: 'text',
  // One (query, document) row per document.
  async cost(input, meter) {
    if (
      !isObject(input) ||
      typeof input['query'] !== 'string' ||
      !Array.isArray(input['documents'])
    )
      return UNIT_COST;
    const query = input['query'];
    const docs = input['documents'].filter((d): d is string => typeof d === 'string');
    const lengths = await Promise.all(docs.map((d) => meter.length(query, d)));
    return { tokens: Math.max(1, ...lengths), rows: Math.max(1, docs.length) };
  },
};
