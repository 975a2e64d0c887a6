// Python generate()'s logits processors that rule tokens out, in its order (transformers 5,
// `_get_logits_processor`): repetition penalty, no_repeat_ngram_size,
// encoder_no_repeat_ngram_size, bad_words_ids, the minimum
// lengths, forced BOS/EOS, suppress_tokens, begin_suppress_tokens; the sampling warpers follow.
// Every ban sets a score to -Infinity, which the repetition penalty leaves as it is, so only the
// forced tokens (which overwrite every score) split them into a before and an after.
import { banEncoderNgrams, banRepeatedNgrams } from './no-repeat-ngram.ts';

export interface TokenBans {
  /** Python's no_repeat_ngram_size; 0 is off. */
  noRepeatNgramSize: number;
  /** Python's encoder_no_repeat_ngram_size: n-grams of the encoder's input ids; 0 is off. */
  encoderNoRepeatNgramSize: number;
  /** Python's bad_words_ids without the EOS-only entries (Python drops those). */
  badWordsIds: readonly (readonly number[])[];
  /** Python's suppress_tokens: never generated. */
  suppressTokens: readonly number[];
  /** Python's begin_suppress_tokens: not generated as the token at index `beginSuppressAt`. */
  beginSuppressTokens: readonly number[];
  /** Generated tokens before the one begin_suppress_tokens applies to (1 after a forced BOS). */
  beginSuppressAt: number;
}

export const NO_BANS: TokenBans = {
  noRepeatNgramSize: 0,
  encoderNoRepeatNgramSize: 0,
  badWordsIds: [],
  suppressTokens: [],
  beginSuppressTokens: [],
  beginSuppressAt: 0,
};

type Scores = Float32Array | Float64Array;

/**
 * The processors Python runs before the forced tokens, over the tokens seen so far and the
 * encoder's input ids (a decoder-only model's prompt; none for an image or audio encoder).
 */
export function banBeforeForcing(
  scores: Scores,
  history: readonly number[],
  bans: TokenBans,
  encoderIds: readonly number[] = [],
): void {
  banRepeatedNgrams(scores, history, bans.noRepeatNgramSize);
  banEncoderNgrams(scores, encoderIds, history, bans.encoderNoRepeatNgramSize);
  banBadWords(scores, history, bans.badWordsIds);
}

/** The processors Python runs after the forced tokens; `generated` counts the output so far. */
export function suppressTokens(scores: Scores, generated: number, bans: TokenBans): void {
  ban(scores, bans.suppressTokens);
  if (generated === bans.beginSuppressAt) ban(scores, bans.beginSuppressTokens);
}

/** Leaves only `token` possible: -Infinity everywhere else, its own score 0 (as Python sets it). */
export function force(scores: Scores, token: number): void {
  scores.fill(-Infinity);
  if (token < scores.length) scores[token] = 0;
}

/**
 * Python's NoBadWordsLogitsProcessor (a SequenceBiasLogitsProcessor of -inf): a one-token entry is
 * never generated; a longer one's last token is ruled out when the tokens seen end in the rest.
 */
function banBadWords(
  scores: Scores,
  history: readonly number[],
  words: TokenBans['badWordsIds'],
): void {
  for (const word of words) {
    const prefix = word.length - 1;
    if (prefix > history.length) continue;
    let matches = true;
    for (let k = 0; k < prefix; k += 1) {
      if (history[history.length - prefix + k] !== word[k]) {
        matches = false;
        break;
      }
    }
    const last = word[prefix] as number;
    if (matches && last < scores.length) scores[last] = -Infinity;
  }
}

function ban(scores: Scores, tokens: readonly number[]): void {
  for (const token of tokens) if (token < scores.length) scores[token] = -Infinity;
}
