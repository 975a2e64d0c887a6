// How much of a batch an input will take, measured on the main thread before it is queued: the
// token length of its longest row and how many rows it makes. With 'tokens' pricing, an input
// whose task encodes one plain text (the definition's `encodedText`) is encoded here in a burst
// with its neighbours, and the encoding goes with its batch so the thread does not tokenize it
// again; other inputs are counted here and tokenized again on the thread. With 'characters' the
// length is estimated and only the inference thread tokenizes (docs/batching.md).
// What an input's rows are is the task's to say (its definition's `cost`); this file measures.
import { findTask } from '../pipelines/registry.ts';
import { UNIT_COST, type CostMeter, type InputCost } from '../pipelines/task-definition.ts';
import { canEncode, type PricingTokenizer } from './pricing-tokenizer.ts';
import type { BurstEncoder } from './burst-encoder.ts';
import type { CarriedEncoding } from '../pipelines/runtime/carried-encoding.ts';
import { PREFIX_CHARACTERS_PER_TOKEN, wordPrefix } from '../pipelines/runtime/word-prefix.ts';

export type { InputCost };
export { wordPrefix };

export interface CostContext {
  task: string;
  tokenizer: PricingTokenizer | undefined;
  options: Record<string, unknown>;
  pricing?: 'tokens' | 'characters';
  /** Pricing by tokens: the burst encoder over `tokenizer` whose encodings the threads run. */
  encoder?: BurstEncoder;
}

/** An input's price, and the encoding its batch carries to the thread when it was made here. */
export interface PricedInput extends InputCost {
  carried?: CarriedEncoding;
}

/**
 * WordPiece and BPE vocabularies average about four characters of English per token; the two
 * special tokens are added. Over-estimating only leaves a batch a little short of its budget.
 */
export function estimateTokens(text: string, pair?: string): number {
  const characters = text.length + (pair?.length ?? 0);
  return Math.ceil(characters / 4) + (pair === undefined ? 2 : 3);
}

export async function inputCost(input: unknown, context: CostContext): Promise<PricedInput> {
  const { tokenizer, encoder } = context;
  const definition = findTask(context.task);
  if (tokenizer === undefined || definition === undefined) return UNIT_COST;
  // A pipeline may truncate below the tokenizer's limit (featureExtraction at
  // sentence-transformers' 256); the batch budget must see the length the worker will run.
  const truncateAt = definition.truncatesAt?.(context.options) ?? Number.POSITIVE_INFINITY;
  const max = Math.min(tokenizer.maxLength ?? Number.POSITIVE_INFINITY, truncateAt);
  const text =
    encoder !== undefined && Number.isFinite(max)
      ? definition.encodedText?.(input, context.options)
      : undefined;
  if (text !== undefined && encoder !== undefined) {
    const carried = await encoder.encode(text, max);
    return { tokens: Math.max(carried.ids.length, 1), rows: 1, carried };
  }
  const meter: CostMeter = {
    maxTokens: max,
    options: context.options,
    async length(text, pair) {
      if (context.pricing === 'characters' || !canEncode(tokenizer))
        return Math.min(estimateTokens(text, pair), max);
      const count = async (t: string): Promise<number> => {
        const [encoded] = await tokenizer.encode([pair === undefined ? t : [t, pair]], {
          truncation: false,
        });
        return encoded?.ids.length ?? 1;
      };
      const prefix = wordPrefix(text, max * PREFIX_CHARACTERS_PER_TOKEN);
      if (prefix !== undefined && (await count(prefix)) >= max) return max;
      return Math.min(await count(text), max);
    },
  };
  return definition.cost(input, meter);
}
