// What a request on the generative engine streams: its tokens, then its result. Every loop's
// result crosses the thread boundary and reaches the route as one type, so the fields a segment
// task adds to a decoded sequence's (its own result type, beside its definition) are optional here.
import type { SpeechResult } from '../pipelines/audio/text-to-speech.ts';
import type { TranscriptResult } from '../pipelines/audio/speech-recognition.ts';
import type { GenerationResult } from '../pipelines/generation/generation-progress.ts';
import type { AudioChunk } from '../pipelines/generation/segmentwise.ts';

type Added<T> = Partial<Omit<T, keyof GenerationResult>>;

export type EngineResult = GenerationResult & Added<TranscriptResult> & Added<SpeechResult>;

/** One `token` event per generated token, then `done`. */
export type EngineEvent =
  | {
      type: 'token';
      tokenId: number;
      /** Text this token settled; the texts of all token events add up to the result's text. */
      text: string;
      /** Speech synthesis: samples that became final; they add up to the waveform. */
      audio?: AudioChunk;
    }
  | { type: 'done'; result: EngineResult };
