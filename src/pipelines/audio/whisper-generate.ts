// Whisper's generate() for a batch of clips, as WhisperGenerationMixin runs it: each clip's
// log-mel is read one 30 s segment at a time from a seek position; a segment is encoded, its
// prompt fed (the language detected first when none is set), and tokens generated greedily or by
// beam search under Whisper's logits processors. When the output ends on a timestamp pair the
// audio after that timestamp is transcribed again from there (Python does this even for a clip
// under 30 s), so one clip's tokens are its segments' tokens, one after the other.
import { InferenceError } from '../../errors.ts';
import { beamSearch } from '../seq2seq/beam-search.ts';
import type { DecoderStepper } from '../seq2seq/decoder-stepper.ts';
import type { Seq2SeqSettings } from '../seq2seq/seq2seq-settings.ts';
import { processWhisperScores } from './whisper-logits.ts';
import { promptFor, type WhisperSettings } from './whisper-settings.ts';

/** One clip's log-mel features, `[featureSize][frames]` row after row. */
export interface WhisperClip {
  features: Float32Array;
  frames: number;
  /** Predict timestamps (asked for, or the clip is longer than one segment). */
  timestamps: boolean;
}

/** Encodes `[rows, featureSize, segmentFrames]` features and returns a decoder over them. */
export type EncodeSegments = (features: Float32Array, rows: number) => Promise<DecoderStepper>;

/** A clip being transcribed: where its next segment starts and the tokens its segments kept. */
export interface ClipState {
  readonly clip: WhisperClip;
  seek: number;
  language: number | undefined;
  tokens: number[];
  /** How the last segment's generation ended: on <|endoftext|> or at maxNewTokens. */
  ended: 'eos' | 'length' | undefined;
  /** Why the clip stopped short (it is done, its transcript incomplete). */
  error?: InferenceError;
}

/** A clip's tokens (its segments' one after the other) and the language token it was prompted with. */
export interface WhisperOutput {
  tokens: number[];
  language: number | undefined;
}

export function startClip(clip: WhisperClip): ClipState {
  return { clip, seek: 0, language: undefined, tokens: [], ended: undefined };
}

export function clipDone(state: ClipState): boolean {
  return state.seek >= state.clip.frames;
}

/** The language token a clip was prompted with: detected, else the one the settings name. */
export function languageOf(state: ClipState, settings: WhisperSettings): number | undefined {
  if (state.language !== undefined) return state.language;
  const languages = new Set(settings.langToId.values());
  return settings.prompt.find((t): t is number => typeof t === 'number' && languages.has(t));
}

export async function whisperGenerate(
  clips: readonly WhisperClip[],
  settings: WhisperSettings,
  featureSize: number,
  encode: EncodeSegments,
): Promise<WhisperOutput[]> {
  const states = clips.map(startClip);
  while (states.some((s) => !clipDone(s)))
    await advanceClips(states, settings, featureSize, encode);
  const failed = states.find((s) => s.error !== undefined);
  if (failed?.error !== undefined) throw failed.error;
  return states.map((s) => ({ tokens: s.tokens, language: languageOf(s, settings) }));
}

/**
 * One segment of every unfinished clip, batched; clips may be at different seek positions. What a
 * segment keeps is final: later segments only add tokens after it.
 */
export async function advanceClips(
  states: readonly ClipState[],
  settings: WhisperSettings,
  featureSize: number,
  encode: EncodeSegments,
): Promise<void> {
  const active = states.filter((s) => !clipDone(s));
  // Rows of one decoder share a prompt length: with timestamps the prompt has no <|notimestamps|>.
  for (const group of [true, false].map((t) => active.filter((s) => s.clip.timestamps === t))) {
    if (group.length > 0) await segmentStep(group, settings, featureSize, encode);
  }
}

async function segmentStep(
  group: readonly ClipState[],
  settings: WhisperSettings,
  featureSize: number,
  encode: EncodeSegments,
): Promise<void> {
  const frames = settings.segmentFrames;
  const input = new Float32Array(group.length * featureSize * frames);
  const spans = group.map((state, row) => {
    const { clip, seek } = state;
    const span = Math.min(clip.frames - seek, frames);
    for (let m = 0; m < featureSize; m += 1) {
      const from = m * clip.frames + seek;
      // Past the clip's end the segment is zeros, as Python pads it.
      input.set(clip.features.subarray(from, from + span), (row * featureSize + m) * frames);
    }
    return span;
  });
  const decoder = await encode(input, group.length);
  let generated: number[][];
  try {
    generated = await decodeSegment(decoder, group, settings);
  } finally {
    decoder.release?.();
  }
  group.forEach((state, row) => {
    const sequence = generated[row] as number[];
    state.ended = sequence.at(-1) === settings.eosId ? 'eos' : 'length';
    if (state.ended === 'eos') sequence.pop();
    const { tokens, offset } = segmentOf(sequence, spans[row] as number, settings);
    if (offset <= 0) {
      // This clip alone stops; the batch path fails its batch, the engine only this request.
      state.error = new InferenceError(
        'Whisper ended a segment on timestamp <|0.00|>: the transcription would not advance',
      );
      state.seek = state.clip.frames;
      return;
    }
    state.tokens.push(...tokens);
    state.seek += offset;
  });
}

/** The segment's prompt fed (and the language detected), then its search: each row's tokens. */
async function decodeSegment(
  decoder: DecoderStepper,
  group: readonly ClipState[],
  settings: WhisperSettings,
): Promise<number[][]> {
  const timestamps = (group[0] as ClipState).clip.timestamps;
  const detect = settings.prompt.includes('detect');
  let fed = 0;
  if (detect) {
    // The step on <|startoftranscript|> detects the language (once per clip).
    const logits = await decoder.step(group.map(() => settings.startId));
    fed = 1;
    group.forEach((state, row) => {
      state.language ??= detectLanguage(logits[row] as Float32Array, settings);
    });
  }
  const prompts = group.map((state) => promptFor(settings, timestamps, state.language));
  const promptLength = (prompts[0] as number[]).length;
  // All of the prompt but its last token, which the search feeds.
  for (let position = fed; position < promptLength - 1; position += 1)
    await decoder.step(prompts.map((p) => p[position] as number));
  if (settings.numBeams > 1) {
    return beamSearch(decoder, beamSettings(settings), {
      prompts,
      process: (tokens, scores) =>
        processWhisperScores(scores, tokens, promptLength, timestamps, settings),
    });
  }
  return greedy(decoder, prompts, settings, timestamps);
}

/** Python's detect_language: the most likely language token after <|startoftranscript|>. */
function detectLanguage(logits: Float32Array, settings: WhisperSettings): number {
  let best: number | undefined;
  for (const id of [...settings.langToId.values()].sort((a, b) => a - b))
    if (best === undefined || (logits[id] as number) > (logits[best] as number)) best = id;
  return best as number;
}

/** Greedy decoding; the decoder has been fed all of each prompt but its last token. */
async function greedy(
  decoder: DecoderStepper,
  prompts: readonly number[][],
  settings: WhisperSettings,
  timestamps: boolean,
): Promise<number[][]> {
  const promptLength = (prompts[0] as number[]).length;
  const sequences = prompts.map((p) => [...p]);
  let active = sequences.map((_, row) => row);
  let tokens = sequences.map((s) => s.at(-1) as number);
  while (active.length > 0) {
    const logits = await decoder.step(tokens);
    const keep: number[] = [];
    const next: number[] = [];
    active.forEach((row, i) => {
      const sequence = sequences[row] as number[];
      const scores = Float32Array.from(logits[i] as Float32Array);
      processWhisperScores(scores, sequence, promptLength, timestamps, settings);
      const token = argmax(scores);
      sequence.push(token);
      if (token !== settings.eosId && sequence.length - promptLength < settings.maxNewTokens) {
        keep.push(i);
        next.push(token);
      }
    });
    if (keep.length > 0 && keep.length < active.length) decoder.select(keep);
    active = keep.map((i) => active[i] as number);
    tokens = next;
  }
  return sequences.map((s) => s.slice(promptLength));
}

/**
 * Python's _retrieve_segment: the tokens a generation keeps and how many frames it advances.
 * Output ending on a timestamp pair is cut after the pair and the next segment starts at its
 * first timestamp; otherwise (no pair, or a lone final timestamp) all is kept and the whole
 * segment is done.
 */
export function segmentOf(
  sequence: readonly number[],
  span: number,
  settings: Pick<WhisperSettings, 'timestampBegin' | 'inputStride'>,
): { tokens: number[]; offset: number } {
  const begin = settings.timestampBegin;
  const isTime = sequence.map((t) => t >= begin);
  const n = isTime.length;
  const singleEnding = n >= 2 && !isTime[n - 2] && isTime[n - 1] === true;
  let lastPair = -1;
  for (let i = 0; i + 1 < n; i += 1) if (isTime[i] && isTime[i + 1]) lastPair = i + 1;
  if (lastPair < 0 || singleEnding) return { tokens: [...sequence], offset: span };
  const end = lastPair + 1;
  const lastTimestamp = (sequence[end - 2] as number) - begin;
  return { tokens: sequence.slice(0, end), offset: lastTimestamp * settings.inputStride };
}

function beamSettings(s: WhisperSettings): Seq2SeqSettings {
  return {
    decoderStartTokenId: s.startId,
    eosTokenIds: new Set([s.eosId]),
    forcedBosTokenId: undefined,
    forcedEosTokenId: undefined,
    maxNewTokens: s.maxNewTokens,
    minNewTokens: 0,
    sampling: { doSample: false, temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1 },
    seed: undefined,
    stopSequences: [],
    numBeams: s.numBeams,
    lengthPenalty: s.lengthPenalty,
    earlyStopping: s.earlyStopping,
  };
}

/** The first index of the largest score (torch.argmax). */
function argmax(scores: Float32Array): number {
  let best = 0;
  for (let i = 1; i < scores.length; i += 1)
    if ((scores[i] as number) > (scores[best] as number)) best = i;
  return best;
}
