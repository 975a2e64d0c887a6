// How much of a batch an input will take, measured on the main thread before it is queued: the
// token length of its longest row and how many rows it makes. With 'tokens' pricing the inference
// thread tokenizes again (docs/batching.md has the measurement that made this the cheaper choice
// on CPU); with 'characters' the length is estimated and only the inference thread tokenizes.
// What an input's rows are is the task's to say (its definition's `cost`); this file measures.
import { findTask } from '../pipelines/registry.ts';
import { UNIT_COST, type CostMeter, type InputCost } from '../pipelines/task-definition.ts';
import type { TextTokenizer } from '../pipelines/runtime/text-tokenizer.ts';

export type { InputCost };

export interface CostContext {
  task: string;
  tokenizer: TextTokenizer | undefined;
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

/** Characters per token a prefix is given: well above English's ~4.5, so it rarely falls short. */
const PREFIX_CHARACTERS_PER_TOKEN = 8;

/**
 * The text cut at a whitespace at most `characters` in, or undefined when the text is no longer.
 * Tokenizers split words at whitespace before anything else, so the cut prefix's tokens are
 * exactly the first tokens of the whole text: if the prefix alone reaches the cap, so does the
 * text, and the rest need never be tokenized.
 */
export function wordPrefix(text: string, characters: number): string | undefined {
  if (!Number.isFinite(characters) || text.length <= characters) return undefined;
  const cut = text.lastIndexOf(' ', characters);
  return cut > 0 ? text.slice(0, cut) : undefined;
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
      if (context.pricing === 'characters') return Math.min(estimateTokens(text, pair), max);
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
