// The settings one encoder–decoder generation runs with, resolved from the call, the pipeline's
// options, generation_config.json (and config.json's task_specific_params) and Python's defaults.
import type { SamplingSettings } from '../generation/sampling.ts';
import type { TokenBans } from '../generation/token-bans.ts';

export { force } from '../generation/token-bans.ts';

export type EarlyStopping = boolean | 'never';

export interface Seq2SeqSettings {
  /** The first decoder input of every row (T5: pad, BART: </s>, Whisper: <|startoftranscript|>). */
  decoderStartTokenId: number;
  eosTokenIds: ReadonlySet<number>;
  /** Python's ForcedBOSTokenLogitsProcessor: the first generated token (BART: <s>). */
  forcedBosTokenId: number | undefined;
  /** Python's ForcedEOSTokenLogitsProcessor: the token generated at the length limit. */
  forcedEosTokenId: number | undefined;
  maxNewTokens: number;
  minNewTokens: number;
  sampling: SamplingSettings;
  seed: number | undefined;
  stopSequences: readonly string[];
  numBeams: number;
  /** Beam scores are divided by length ** lengthPenalty; > 0 favours longer outputs. */
  lengthPenalty: number;
  earlyStopping: EarlyStopping;
  /** Tokens ruled out at each step (no_repeat_ngram_size, bad_words_ids, suppress_tokens...). */
  bans?: TokenBans | undefined;
  /** Python's renormalize_logits: beam scores are log-softmaxed again after the processors. */
  renormalizeLogits?: boolean | undefined;
}

/** Python's forced-token processors: every other token is ruled out (set to -Infinity). */
export function forcedToken(settings: Seq2SeqSettings, generated: number): number | undefined {
  if (generated === 0 && settings.forcedBosTokenId !== undefined) return settings.forcedBosTokenId;
  if (generated === settings.maxNewTokens - 1 && settings.forcedEosTokenId !== undefined)
    return settings.forcedEosTokenId;
  return undefined;
}
