// What the generative engine's segment loop needs from a pipeline whose output becomes final a
// segment at a time, not a token at a time: Whisper decides only at a segment's end which of its
// tokens it keeps (the rest is transcribed again from the last timestamp pair), so a token is
// safe to stream only once its segment has ended. Each job advances one segment per step, batched
// with every other job's segment whatever its position in its own clip. Speech synthesis is one
// too: a job's step is one decoder step, and its audio is final once no later frame can reach it.
import type { GenerationResult } from './generation-progress.ts';

/**
 * How a route writes waveform samples as WAV: the model's float32 exactly, or 16-bit PCM. Named
 * here, not by the encoder, because generation sits below the audio pipelines.
 */
export type WavFormat = 'float32' | 'pcm16';

/** Waveform samples that became final, and how the route writes them as WAV. */
export interface AudioChunk {
  samples: Float32Array;
  samplingRate: number;
  format: WavFormat;
}

export interface SegmentJob {
  /** Every token the job's ended segments kept, in order. */
  readonly tokens: readonly number[];
  readonly done: boolean;
  /** Set when this job alone failed in `advance`; the loop fails it and goes on with the rest. */
  readonly error?: unknown;
}

export interface SegmentwiseGenerator<Job extends SegmentJob = SegmentJob> {
  readonly task: string;
  /** Fails (ConfigError) when the pipeline's options need the whole input at once. */
  assertSegmentwise(): Promise<void>;
  /** Checks and prepares one request's input; throws InputError. */
  startJob(input: unknown): Promise<Job>;
  /** Runs the next segment of every given job, as one batch; throws when the whole step failed. */
  advance(jobs: readonly Job[]): Promise<void>;
  /** The text of what the job has kept so far, as its final result would write it. */
  textOf(job: Job): Promise<string>;
  result(job: Job): Promise<GenerationResult>;
  /** Audio that became final since the last call (speech synthesis). */
  takeAudio?(job: Job): AudioChunk | undefined;
}

export function isSegmentwiseGenerator(pipeline: unknown): pipeline is SegmentwiseGenerator {
  if (pipeline === null || typeof pipeline !== 'object') return false;
  const p = pipeline as Record<string, unknown>;
  return ['assertSegmentwise', 'startJob', 'advance', 'textOf', 'result'].every(
    (name) => typeof p[name] === 'function',
  );
}
