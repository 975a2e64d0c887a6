// An encoder–decoder batch as the engine's cohort loop takes it: every row starts from the decoder
// start token, its GenerationProgress applying Python's processors (forced BOS/EOS, bans, n-grams
// over its encoder ids), as greedy-search.ts runs it.
import { ConfigError } from '../../errors.ts';
import { GenerationProgress } from '../generation/generation-progress.ts';
import type { GenerationCohort } from '../generation/stepwise.ts';
import type { DecoderStepper } from './decoder-stepper.ts';
import { progressSettings } from './greedy-search.ts';
import type { Seq2SeqSettings } from './seq2seq-settings.ts';

export function seq2seqCohort(
  decoder: DecoderStepper,
  settings: Seq2SeqSettings,
  promptTokens: number[],
  encoderIds?: readonly (readonly number[])[],
): GenerationCohort {
  const start = settings.decoderStartTokenId;
  const shared = progressSettings(settings);
  return {
    decoder,
    progress: promptTokens.map(
      (_, row) => new GenerationProgress([start], shared, { encoderIds: encoderIds?.[row] ?? [] }),
    ),
    firstTokens: promptTokens.map(() => start),
    promptTokens,
  };
}

/** Beam search knows no token until its beams end: it has nothing to stream. */
export function assertStepwiseSettings(task: string, settings: Seq2SeqSettings): void {
  if (settings.numBeams > 1) {
    throw new ConfigError(
      `${task} on the generative engine decodes greedily or by sampling; numBeams ` +
        `${settings.numBeams} runs on the batch engine: remove the pipeline's generative block ` +
        'or set options.numBeams: 1',
      { field: 'options.numBeams' },
    );
  }
}
