// What the generative engine's cohort loop needs from a pipeline whose generation it cannot run
// itself (encoder–decoders, vision-language models): prepare one request's input, start a batch
// of prepared inputs as one decoder ("cohort"), and decode text. Each row keeps its own
// GenerationProgress, so a request's tokens do not depend on who shares its cohort.
import type { GenerationProgress } from './generation-progress.ts';

/** One decoder batch: `step` feeds one token per row and returns each row's next-token logits. */
export interface RowStepper {
  step(tokens: readonly number[]): Promise<Float32Array[]>;
  /** Keeps the given rows, in this order, with everything cached for them. */
  select(rows: readonly number[]): void;
  /** Frees what it holds outside JS (a cache resident on a device) once its rows have all ended. */
  release?(): void;
}

export interface GenerationCohort {
  decoder: RowStepper;
  /** Per row, in the prepared inputs' order. */
  progress: GenerationProgress[];
  /** What each row feeds at the first step (ignored by a decoder that starts with a prefill). */
  firstTokens: number[];
  /** Per row, the input's length as a result's `promptTokens` counts it. */
  promptTokens: number[];
}

export interface StepwiseGenerator<Prepared = unknown> {
  readonly task: string;
  /**
   * Fails (ConfigError) when the pipeline's options need whole-batch decoding (beam search) or
   * its generation config asks for what it does not do.
   */
  assertStepwise(): Promise<void>;
  /** Checks one request's input and prepares it; throws InputError. */
  prepareInput(input: unknown): Promise<Prepared>;
  startCohort(prepared: readonly Prepared[]): Promise<GenerationCohort>;
  /** Generated ids to text, as the pipeline's own postprocessing decodes them. */
  decodeText(ids: readonly number[]): Promise<string>;
}

export function isStepwiseGenerator(pipeline: unknown): pipeline is StepwiseGenerator {
  if (pipeline === null || typeof pipeline !== 'object') return false;
  const p = pipeline as Record<string, unknown>;
  return ['assertStepwise', 'prepareInput', 'startCohort', 'decodeText'].every(
    (name) => typeof p[name] === 'function',
  );
}
