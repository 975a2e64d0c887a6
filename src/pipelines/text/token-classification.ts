// Token classification (NER) as transformers' TokenClassificationPipeline does it: softmax per
// token, special tokens dropped, subword detection from the tokenizer, then the chosen
// aggregation (token-aggregation.ts). Offsets are code points into the original text, as Python's.
import { Tokenizer } from 'tokenizers';
import type { z } from 'zod';
import { lazySchema } from '../../options/lazy-schema.ts';
import { softmax } from '../runtime/math.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { assertString } from '../pipeline.ts';
import { row } from '../runtime/tensors.ts';
import { textInput, type TaskDefinition } from '../task-definition.ts';
import { labelOf, logitsOf } from '../runtime/label-scores.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';
import {
  aggregate,
  withoutIgnored,
  type AggregationContext,
  type Entity,
  type PreEntity,
} from './token-aggregation.ts';

export type { AggregationStrategy, Entity, EntityGroup, TokenEntity } from './token-aggregation.ts';

export const tokenClassificationOptionsSchema = lazySchema((z) =>
  z
    .object({
      /** How tokens become entities; 'none' returns one entity per token, as Python's default. */
      aggregationStrategy: z.enum(['none', 'simple', 'first', 'average', 'max']).default('none'),
      /** Entities (or groups) with these labels are dropped. */
      ignoreLabels: z.array(z.string()).default(['O']),
    })
    .strict(),
);

export type TokenClassificationOptions = z.input<typeof tokenClassificationOptionsSchema.schema>;

const TASK = 'tokenClassification';

export class TokenClassificationPipeline extends BasePipeline<
  string,
  Entity[],
  typeof tokenClassificationOptionsSchema.schema
> {
  private readonly context: AggregationContext;
  private readonly subwordPrefix: string | undefined;
  private readonly unkId: number | undefined;

  constructor(model: LoadedModel, options: TokenClassificationOptions = {}) {
    super(TASK, model, tokenClassificationOptionsSchema, options);
    const spec = JSON.parse(this.tokenizer.json) as {
      model?: { continuing_subword_prefix?: unknown };
    };
    const prefix = spec.model?.continuing_subword_prefix;
    this.subwordPrefix = typeof prefix === 'string' && prefix !== '' ? prefix : undefined;
    this.unkId = this.tokenizer.tokenId(this.tokenizer.special.unk);
    const decoder = Tokenizer.fromString(this.tokenizer.json).getDecoder();
    this.context = {
      labelOf: (index) => labelOf(model, index),
      // Python's convert_tokens_to_string: the tokenizer's decoder, or a plain space join.
      tokensToString: (tokens) =>
        decoder === null ? tokens.join(' ') : decoder.decode([...tokens]),
    };
  }

  protected async runBatch(inputs: readonly string[]): Promise<Entity[][]> {
    inputs.forEach((input, i) => assertString(input, TASK, `inputs[${i}]`));
    // Python always truncates to the model's maximum length here (no stride: one window).
    const encoded = await this.encode(inputs, { truncation: 'longest_first' });
    const logits = logitsOf(this.model, await this.inferText(encoded));
    const labels = logits.dims.at(-1) ?? 0;
    return inputs.map((text, b) => {
      const rows = row(logits, b);
      const scores = (i: number): number[] => softmax(rows.subarray(i * labels, (i + 1) * labels));
      const pre = this.preEntities(text, encoded[b] as TokenizedText, scores);
      const entities = aggregate(pre, this.options.aggregationStrategy, this.context);
      return withoutIgnored(entities, this.options.ignoreLabels);
    });
  }

  /** Python's gather_pre_entities. */
  private preEntities(
    text: string,
    encoding: TokenizedText,
    scores: (index: number) => number[],
  ): PreEntity[] {
    // Offsets count code points, so the text is sliced as an array of them.
    const chars = Array.from(text);
    const pre: PreEntity[] = [];
    for (let index = 0; index < encoding.ids.length; index += 1) {
      if (encoding.specialTokensMask[index] === 1) continue;
      const id = encoding.ids[index] as number;
      const [start, end] = encoding.offsets[index] ?? [0, 0];
      const wordRef = chars.slice(start, end).join('');
      let word = this.tokenizer.idToToken(id) ?? '';
      let isSubword: boolean;
      if (this.subwordPrefix !== undefined) {
        // A word-aware tokenizer spells a continuation with its prefix, so lengths differ.
        isSubword = codePoints(word) !== codePoints(wordRef);
      } else {
        // Python's fallback heuristic for tokenizers that do not mark continuations.
        isSubword = start > 0 && !chars.slice(start - 1, start + 1).includes(' ');
      }
      if (id === this.unkId) {
        word = wordRef;
        isSubword = false;
      }
      pre.push({ word, scores: scores(index), start, end, index, isSubword });
    }
    return pre;
  }
}

function codePoints(text: string): number {
  return Array.from(text).length;
}

export const tokenClassificationTask: TaskDefinition = {
  needs: {
    tokenizer: true,
    labels: true,
    inputs: ['input_ids'],
    outputs: [
      {
        names: ['logits'],
        rank: 3,
        what: 'per-token logits [batch, tokens, labels]',
        width: 'labels',
      },
    ],
  },
  task: TASK,
  execution: 'batch',
  get optionsSchema() {
    return tokenClassificationOptionsSchema.schema;
  },
  create: (model, options) =>
    new TokenClassificationPipeline(model, options as TokenClassificationOptions),
  pythonOutput: (result) =>
    (result as Entity[]).map((e) => {
      if (!('entityGroup' in e)) return e;
      const { entityGroup, ...rest } = e;
      return { entity_group: entityGroup, ...rest };
    }),
  ...textInput,
  inputKind: 'text',
};
