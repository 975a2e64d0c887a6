// Question answering reads a long context through overlapping windows, each holding the whole
// question. Python gets them from the Rust tokenizer's `only_second` truncation with a stride and
// `return_overflowing_tokens`; the node binding's overflowing encodings are incomplete (it returns
// one short window where Python gets sixteen), so the windows are cut here from the untruncated
// pair encoding with the same arithmetic as Rust's `Encoding::truncate`.
import { InputError } from '../../errors.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';

/**
 * `full` is the question + context pair encoded with special tokens and without truncation. Every
 * window is the part before the context (CLS, question, SEP), one slice of the context tokens and
 * the part after it (SEP), exactly what the tokenizer's template gives for each overflow part.
 */
export function contextWindows(
  full: TokenizedText,
  maxLength: number,
  stride: number,
  field: string,
  task = 'questionAnswering',
): TokenizedText[] {
  if (full.ids.length <= maxLength) return [full];
  const first = full.sequenceIds.indexOf(1);
  const last = full.sequenceIds.lastIndexOf(1);
  if (first < 0) return [full];
  const contextLength = last + 1 - first;
  const overhead = full.ids.length - contextLength;
  // Rust's truncation refuses when the context cannot shrink enough, and asserts stride < window.
  const window = maxLength - overhead;
  if (window <= 0) {
    throw new InputError(
      `${task}: the question takes ${overhead} of the ${maxLength} tokens a window holds (maxSeqLength), leaving none for the context`,
      { field: `${field}.question` },
    );
  }
  if (stride >= window) {
    throw new InputError(
      `${task}: docStride ${stride} must be below the ${window} context tokens a window holds beside this question; lower docStride or raise maxSeqLength`,
      { field: `${field}.question` },
    );
  }
  const head = range(0, first);
  const tail = range(last + 1, full.ids.length);
  const windows: TokenizedText[] = [];
  for (let start = 0; ; start += window - stride) {
    const stop = Math.min(start + window, contextLength);
    windows.push(pick(full, [...head, ...range(first + start, first + stop), ...tail]));
    if (stop === contextLength) break;
  }
  return windows;
}

function pick(encoding: TokenizedText, indices: readonly number[]): TokenizedText {
  const take = <T>(values: readonly T[]): T[] => indices.map((i) => values[i] as T);
  return {
    ids: take(encoding.ids),
    typeIds: take(encoding.typeIds),
    attentionMask: take(encoding.attentionMask),
    specialTokensMask: take(encoding.specialTokensMask),
    offsets: take(encoding.offsets),
    wordIds: take(encoding.wordIds),
    sequenceIds: take(encoding.sequenceIds),
    overflowing: [],
  };
}

function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
