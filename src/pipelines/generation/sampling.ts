// Choosing the next token from the logits, with Python generate()'s processors in its order:
// repetition penalty on the raw logits, then (when sampling) temperature, top-k and top-p, then a
// draw from the softmax. Greedy takes the first maximum, as torch.argmax does.

export interface SamplingSettings {
  doSample: boolean;
  temperature: number;
  /** 0 disables top-k filtering. */
  topK: number;
  /** 1 disables nucleus filtering. */
  topP: number;
  /** 1 disables the penalty. */
  repetitionPenalty: number;
}

export function chooseToken(
  logits: Float32Array,
  history: readonly number[],
  settings: SamplingSettings,
  random: () => number,
): number {
  const scores = Float64Array.from(logits);
  if (settings.repetitionPenalty !== 1) penalize(scores, history, settings.repetitionPenalty);
  // A temperature of 0 is the limit of sampling ever colder: the most likely token, i.e. greedy.
  if (!settings.doSample || settings.temperature === 0) return argmax(scores);
  for (let i = 0; i < scores.length; i += 1)
    scores[i] = (scores[i] as number) / settings.temperature;
  if (settings.topK > 0 && settings.topK < scores.length) keepTopK(scores, settings.topK);
  if (settings.topP < 1) keepTopP(scores, settings.topP);
  return draw(scores, random());
}

export function argmax(scores: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < scores.length; i += 1) {
    if ((scores[i] as number) > (scores[best] as number)) best = i;
  }
  return best;
}

/** Python's RepetitionPenaltyLogitsProcessor: every token seen (prompt included) once. */
export function penalize(
  scores: Float64Array | Float32Array,
  history: readonly number[],
  penalty: number,
): void {
  for (const id of new Set(history)) {
    const score = scores[id];
    if (score === undefined) continue;
    scores[id] = score < 0 ? score * penalty : score / penalty;
  }
}

/** Keeps every score at least the k-th largest (ties with it stay, as in Python). */
function keepTopK(scores: Float64Array, k: number): void {
  const threshold = Float64Array.from(scores).sort().reverse()[k - 1] as number;
  for (let i = 0; i < scores.length; i += 1) {
    if ((scores[i] as number) < threshold) scores[i] = -Infinity;
  }
}

/**
 * Python's TopPLogitsWarper: sorted ascending, drop tokens while the cumulative probability stays
 * at or below 1 - topP, always keeping the most likely token.
 */
function keepTopP(scores: Float64Array, topP: number): void {
  const order = Array.from({ length: scores.length }, (_, i) => i).sort(
    (a, b) => (scores[a] as number) - (scores[b] as number) || a - b,
  );
  const probs = softmax64(scores);
  let cumulative = 0;
  for (let j = 0; j < order.length - 1; j += 1) {
    const i = order[j] as number;
    cumulative += probs[i] as number;
    if (cumulative > 1 - topP) break;
    scores[i] = -Infinity;
  }
}

function draw(scores: Float64Array, u: number): number {
  const probs = softmax64(scores);
  let cumulative = 0;
  let last = 0;
  for (let i = 0; i < probs.length; i += 1) {
    const p = probs[i] as number;
    if (p === 0) continue;
    last = i;
    cumulative += p;
    if (u < cumulative) return i;
  }
  // Rounding can leave the total a hair under u; the last possible token takes the remainder.
  return last;
}

function softmax64(scores: Float64Array): Float64Array {
  let max = -Infinity;
  for (const s of scores) max = Math.max(max, s);
  const out = scores.map((s) => Math.exp(s - max));
  const sum = out.reduce((a, b) => a + b, 0);
  return out.map((e) => e / sum);
}
