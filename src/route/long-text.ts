// A text over limits.maxTextLength for a pipeline that truncates at a token cap anyway: cut at a
// word instead of refused. Tokenizers split at whitespace before anything else, so the cut text's
// tokens are the whole text's first ones; and when the kept part holds more words than any
// encoder we run has positions, truncation never reaches the cut, so the model sees exactly what
// it would have seen of the whole text.
import { wordPrefix } from '../pipelines/runtime/word-prefix.ts';

/** ModernBERT's 8,192 positions: the longest encoder context a truncating task runs here. */
export const WORDS_KEPT_AT_LEAST = 8192;

export interface TextCut {
  /** Characters the input had. */
  from: number;
  /** Characters kept. */
  to: number;
}

/**
 * The text cut at a space within `maxLength` characters; undefined when it is not over the
 * limit, or when the kept part would hold too few words for the cut to be invisible (the record
 * is then refused as TOO_LARGE, as any over-limit text).
 */
export function cutLongText(text: string, maxLength: number): string | undefined {
  const kept = wordPrefix(text, maxLength);
  if (kept === undefined || wordsAtLeast(kept, WORDS_KEPT_AT_LEAST) === false) return undefined;
  return kept;
}

/** Whether `text` has at least `words` whitespace-separated words, reading no further than needed. */
export function wordsAtLeast(text: string, words: number): boolean {
  let seen = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i += 1) {
    const space = /\s/.test(text[i] as string);
    if (!space && !inWord && ++seen >= words) return true;
    inWord = !space;
  }
  return false;
}
