// Python's NoRepeatNGramLogitsProcessor: no n-gram may occur twice in a sequence. The tokens seen
// so far (a causal model's prompt included; an encoder–decoder's decoder input, its start token
// included) end in n - 1 tokens; every earlier n-gram that starts with those n - 1 tokens rules
// out its last token for the next step.

/** Sets to -Infinity each token that would repeat an n-gram of `tokens`; n < 1 does nothing. */
export function banRepeatedNgrams(
  scores: Float32Array | Float64Array,
  tokens: readonly number[],
  n: number,
): void {
  const length = tokens.length;
  // Python bans nothing before a whole n-gram has been seen.
  if (n < 1 || length < n) return;
  const prefixStart = length - n + 1;
  // Each window [start, start + n) lies wholly in `tokens`, so the prefix never bans its own successor.
  for (let start = 0; start + n <= length; start += 1) {
    let matches = true;
    for (let k = 0; k < n - 1; k += 1) {
      if (tokens[start + k] !== tokens[prefixStart + k]) {
        matches = false;
        break;
      }
    }
    const banned = tokens[start + n - 1] as number;
    if (matches && banned < scores.length) scores[banned] = -Infinity;
  }
}

/**
 * Python's EncoderNoRepeatNGramLogitsProcessor: the next token may not complete an n-gram of the
 * encoder's input ids whose first n - 1 tokens end the decoder's tokens.
 */
export function banEncoderNgrams(
  scores: Float32Array | Float64Array,
  encoderIds: readonly number[],
  tokens: readonly number[],
  n: number,
): void {
  if (n < 1) return;
  // Python's processor reads the decoder's tail only once it holds n - 1 tokens.
  if (tokens.length + 1 < n) return;
  const prefixStart = tokens.length - n + 1;
  for (let start = 0; start + n <= encoderIds.length; start += 1) {
    let matches = true;
    for (let k = 0; k < n - 1; k += 1) {
      if (encoderIds[start + k] !== tokens[prefixStart + k]) {
        matches = false;
        break;
      }
    }
    const banned = encoderIds[start + n - 1] as number;
    if (matches && banned < scores.length) scores[banned] = -Infinity;
  }
}
