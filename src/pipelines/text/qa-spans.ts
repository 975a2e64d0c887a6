// Span scoring for extractive question answering, as the reference pipeline does it per window:
// tokens outside the context are pushed to -10000 before a softmax over start and end logits (CLS
// stays in, its start x end probability being the "no answer" score), then every span
// start <= end < start + maxAnswerLength scores p(start) * p(end).
import { softmax } from '../runtime/math.ts';

export interface TokenSpan {
  /** Token indices within the window, both inclusive. */
  start: number;
  end: number;
  score: number;
}

export interface WindowSpans {
  /** Best spans first; equal scores keep the lower start, then the lower end, first. */
  spans: TokenSpan[];
  /** p(CLS as start) x p(CLS as end). */
  nullScore: number;
}

const MASKED_LOGIT = -10000;

/**
 * `undesired` marks tokens that cannot be part of an answer (question, special and padding
 * tokens); `clsIndex` is never part of an answer either, but takes part in the softmax.
 */
export function bestSpans(
  startLogits: ArrayLike<number>,
  endLogits: ArrayLike<number>,
  undesired: readonly boolean[],
  clsIndex: number,
  topK: number,
  maxAnswerLength: number,
): WindowSpans {
  const masked = (logits: ArrayLike<number>): number[] =>
    undesired.map((out, i) => (out ? MASKED_LOGIT : (logits[i] as number)));
  const pStart = softmax(masked(startLogits));
  const pEnd = softmax(masked(endLogits));
  const nullScore = (pStart[clsIndex] ?? 0) * (pEnd[clsIndex] ?? 0);
  pStart[clsIndex] = 0;
  pEnd[clsIndex] = 0;

  const eligible = undesired.flatMap((out, i) => (out || i === clsIndex ? [] : [i]));
  // Python sorts every span (stable, by score) and walks the positive ones in order; visiting
  // starts and ends in ascending order and only displacing on a strictly higher score keeps the
  // same tie order while holding topK spans at a time.
  const best: TokenSpan[] = [];
  for (const start of eligible) {
    for (const end of eligible) {
      if (end < start) continue;
      if (end > start + maxAnswerLength - 1) break;
      const score = (pStart[start] as number) * (pEnd[end] as number);
      if (!(score > 0)) continue;
      insertBounded(best, { start, end, score }, topK);
    }
  }
  return { spans: best, nullScore };
}

function insertBounded(best: TokenSpan[], span: TokenSpan, limit: number): void {
  if (best.length >= limit && !(span.score > (best[best.length - 1] as TokenSpan).score)) return;
  let at = best.length;
  while (at > 0 && span.score > (best[at - 1] as TokenSpan).score) at -= 1;
  best.splice(at, 0, span);
  if (best.length > limit) best.pop();
}
