// Greedy decoding and sampling for a batch of encoder–decoder rows: every row starts from the
// decoder start token, takes one token a step by the causal pipeline's rules (Python's logits
// processors in its order, forced BOS/EOS among them, sampling, max new tokens, EOS, stop
// sequences), and leaves the batch when it ends, so the decoder only runs the rows still
// generating.
import {
  GenerationProgress,
  type DecodeText,
  type GenerationResult,
  type TokenStep,
} from '../generation/generation-progress.ts';
import type { GenerationSettings } from '../generation/generation-options.ts';
import type { DecoderStepper } from './decoder-stepper.ts';
import { NO_BANS } from '../generation/token-bans.ts';
import type { Seq2SeqSettings } from './seq2seq-settings.ts';

/** Called with each row's step as it is taken (for streaming). */
export type OnToken = (row: number, step: TokenStep) => void;

export async function greedySearch(
  decoder: DecoderStepper,
  settings: Seq2SeqSettings,
  decode: DecodeText,
  onToken?: OnToken,
  encoderIds?: readonly (readonly number[])[],
): Promise<GenerationResult[]> {
  const start = settings.decoderStartTokenId;
  const shared = progressSettings(settings);
  // Python's processors see the decoder's input ids: the start token, then the output; and, for
  // encoder_no_repeat_ngram_size, each row's encoder input ids (none for pixels or audio).
  const progress = Array.from(
    { length: decoder.rows },
    (_, row) => new GenerationProgress([start], shared, { encoderIds: encoderIds?.[row] ?? [] }),
  );
  let active = progress.map((_, row) => row);
  let tokens = active.map(() => start);
  while (active.length > 0) {
    const logits = await decoder.step(tokens);
    const keep: number[] = [];
    const next: number[] = [];
    for (let i = 0; i < active.length; i += 1) {
      const row = active[i] as number;
      const rowProgress = progress[row] as GenerationProgress;
      const scores = logits[i] as Float32Array;
      const step = await rowProgress.accept(rowProgress.choose(scores), decode);
      onToken?.(row, step);
      if (!step.done) {
        keep.push(i);
        next.push(step.tokenId);
      }
    }
    if (keep.length > 0 && keep.length < active.length) decoder.select(keep);
    active = keep.map((i) => active[i] as number);
    tokens = next;
  }
  return progress.map((p) => p.result());
}

/** The causal pipeline's per-sequence settings for one encoder–decoder row. */
export function progressSettings(settings: Seq2SeqSettings): GenerationSettings {
  return {
    maxNewTokens: settings.maxNewTokens,
    minNewTokens: settings.minNewTokens,
    sampling: settings.sampling,
    seed: settings.seed,
    stopSequences: settings.stopSequences,
    systemPrompt: undefined,
    eosTokenIds: settings.eosTokenIds,
    responseFormat: undefined,
    format: undefined,
    bans: settings.bans ?? NO_BANS,
    forcedBosTokenId: settings.forcedBosTokenId,
    forcedEosTokenId: settings.forcedEosTokenId,
  };
}
