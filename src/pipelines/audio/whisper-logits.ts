// Whisper's logits processors, in the order its generate() stacks them: tokens suppressed on the
// first generated step (a blank, <|endoftext|>), tokens suppressed always, then the timestamp rules
// (WhisperTimeStampLogitsProcessor): timestamps come in pairs, never go back, the first token is a
// timestamp no later than max_initial_timestamp_index, and when the timestamps together outweigh
// every text token a timestamp is taken. Scores are logits in greedy decoding and log-probabilities
// in beam search, as in Python.
import type { WhisperSettings } from './whisper-settings.ts';

export function processWhisperScores(
  scores: Float32Array,
  tokens: readonly number[],
  promptLength: number,
  timestamps: boolean,
  s: WhisperSettings,
): void {
  const first = tokens.length === promptLength;
  if (first) for (const t of s.beginSuppressTokens) if (t < scores.length) scores[t] = -Infinity;
  for (const t of s.suppressTokens) if (t < scores.length) scores[t] = -Infinity;
  if (timestamps) timestampRules(scores, tokens, promptLength, s);
}

function timestampRules(
  scores: Float32Array,
  tokens: readonly number[],
  promptLength: number,
  s: WhisperSettings,
): void {
  const begin = s.timestampBegin;
  const vocab = scores.length;
  scores[s.noTimestampsId] = -Infinity;
  const seq = tokens.slice(promptLength);
  const n = seq.length;
  const lastWasTimestamp = n >= 1 && (seq[n - 1] as number) >= begin;
  const penultimateWasTimestamp = n < 2 || (seq[n - 2] as number) >= begin;
  if (lastWasTimestamp) {
    // After a pair comes text; after a lone timestamp, its pair (or the end).
    if (penultimateWasTimestamp) scores.fill(-Infinity, begin, vocab);
    else scores.fill(-Infinity, 0, s.eosId);
  }
  let lastAllowed = begin;
  const seen = seq.filter((t) => t >= begin);
  if (seen.length > 0) {
    const latest = seen.at(-1) as number;
    lastAllowed = lastWasTimestamp && !penultimateWasTimestamp ? latest : latest + 1;
  }
  scores.fill(-Infinity, begin, Math.max(begin, Math.min(lastAllowed, vocab)));
  if (first(tokens, promptLength)) {
    scores.fill(-Infinity, 0, begin);
    if (s.maxInitialTimestampIndex !== undefined)
      scores.fill(-Infinity, Math.min(vocab, begin + s.maxInitialTimestampIndex + 1), vocab);
  }
  // log_softmax, then the timestamps' total probability against the best text token.
  let max = -Infinity;
  for (const x of scores) if (x > max) max = x;
  if (max === -Infinity) return;
  let sum = 0;
  for (const x of scores) sum += Math.exp(x - max);
  const lse = max + Math.log(sum);
  let timestampMax = -Infinity;
  for (let t = begin; t < vocab; t += 1) timestampMax = Math.max(timestampMax, scores[t] as number);
  let timestampSum = 0;
  if (timestampMax !== -Infinity)
    for (let t = begin; t < vocab; t += 1)
      timestampSum += Math.exp((scores[t] as number) - timestampMax);
  const timestampLogprob =
    timestampMax === -Infinity ? -Infinity : timestampMax + Math.log(timestampSum) - lse;
  let textMax = -Infinity;
  for (let t = 0; t < begin; t += 1) textMax = Math.max(textMax, scores[t] as number);
  if (timestampLogprob > textMax - lse) scores.fill(-Infinity, 0, begin);
}

function first(tokens: readonly number[], promptLength: number): boolean {
  return tokens.length === promptLength;
}
