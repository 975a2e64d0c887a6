// What the generative engine's encoder–decoder loop needs from a pipeline, whatever its input:
// text for the text-to-text tasks, log-mel features for speech, pixels for image captions. A
// pipeline that has these can run on the engine, one decoder step at a time.
import type { Seq2SeqDecoder } from './seq2seq-model.ts';
import type { Seq2SeqSettings } from './seq2seq-settings.ts';

export interface StepwiseSeq2Seq<Prepared = unknown> {
  readonly task: string;
  resolved(): Promise<{ settings: Seq2SeqSettings }>;
  /** Checks one request's input and prepares the encoder's share of it; throws InputError. */
  prepareInput(input: unknown): Promise<Prepared>;
  /** The encoder input's length (a result's `promptTokens`). */
  inputLength(prepared: Prepared): number;
  /** The encoder's input ids, for encoder_no_repeat_ngram_size (absent: pixels or audio). */
  encoderIds?(prepared: Prepared): readonly number[];
  /** Runs the encoder over prepared inputs; the decoder is ready for its first step. */
  startDecoder(prepared: readonly Prepared[]): Promise<Seq2SeqDecoder>;
  /** Generated ids to the output text, as the pipeline's postprocessing decodes them. */
  decodeText(ids: readonly number[]): Promise<string>;
}

export function isStepwiseSeq2Seq(pipeline: unknown): pipeline is StepwiseSeq2Seq {
  if (pipeline === null || typeof pipeline !== 'object') return false;
  const p = pipeline as Record<string, unknown>;
  return ['resolved', 'prepareInput', 'inputLength', 'startDecoder', 'decodeText'].every(
    (name) => typeof p[name] === 'function',
  );
}
