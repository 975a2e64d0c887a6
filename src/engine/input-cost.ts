// How much of a batch an input will take, measured on the main thread before it is queued: the
// token length of its longest row and how many rows it makes. With 'tokens' pricing the inference
// thread tokenizes again (docs/batching.md has the measurement that made this the cheaper choice
// on CPU); with 'characters' the length is estimated and only the inference thread tokenizes.
// What an input's rows are is the task's to say (its definition's `cost`); this file measures.
import { findTask } from '../pipelines/registry.ts';
import { UNIT_COST, type CostMeter, type InputCost } from '../pipelines/task-definition.ts';
import { canEncode, type PricingTokenizer } from './pricing-tokenizer.ts';
import { PREFIX_CHARACTERS_PER_TOKEN, wordPrefix } from '../pipelines/runtime/word-prefix.ts';

export type { InputCost };
export { wordPrefix };

export interface CostContext {
  task: string;
  tokenizer: PricingTokenizer | undefined;
  options: Record<string, unknown>;
  pricing?: 'tokens' | 'characters';
}

/**
 * WordPiece and BPE vocabularies average about four characters of English per token; the two
 * special tokens are added. Over-estimating only leaves a batch a little short of its budget.
 */
export function estimateTokens(text: string, pair?: string): number {
  const characters = text.length + (pair?.length ?? 0);
  return Math.ceil(characters / 4) + (pair === undefined ? 2 : 3);
}

export async function inputCost(input: unknown, context: CostContext): Promise<InputCost> {
  const { tokenizer } = context;
  const definition = findTask(context.task);
  if (tokenizer === undefined || definition === undefined) return UNIT_COST;
  // A pipeline may truncate below the tokenizer's limit (featureExtraction at
  // sentence-transformers' 256); the batch budget must see the length the worker will run.
  const truncateAt = definition.truncatesAt?.(context.options) ?? Number.POSITIVE_INFINITY;
  const max = Math.min(tokenizer.maxLength ?? Number.POSITIVE_INFINITY, truncateAt);
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
