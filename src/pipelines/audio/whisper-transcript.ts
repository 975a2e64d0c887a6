// Whisper's generated tokens -> the pipeline's text and timestamped chunks, as transformers'
// WhisperTokenizer._decode_asr does it: special tokens are skipped (a language token only records
// the language), a timestamp token opens or closes a chunk, text tokens accumulate; chunks of long
// audio overlap by their strides, so timestamps inside a stride are skipped and the token runs
// either side of an overlap are merged on their longest common stretch. Also Python's
// decode(output_offsets=True) (`_compute_offsets`), the offsets of one generation's segments.

/** What the transcript needs to know of the tokenizer. */
export interface WhisperVocabulary {
  /** <|notimestamps|> + 1: every id from here on is a timestamp, 0.02 s apart. */
  timestampBegin: number;
  /** <|startofprev|>: a prompt of earlier text before <|startoftranscript|>, stripped. */
  promptId: number | undefined;
  startId: number;
  /** Special tokens (<|endoftext|> up to <|notimestamps|>); a language token among them is one of `languages`. */
  isSpecial(id: number): boolean;
  /** Language tokens and the language's name (`english`), as Python's chunks name it. */
  languages: ReadonlyMap<number, string>;
  /** The tokenizer's decode, special tokens kept (Python's default), for text tokens only. */
  decode(ids: readonly number[]): Promise<string>;
}

/** One generation's tokens; `stride` [chunk, left, right] in seconds when the audio was chunked. */
export interface TranscribedChunk {
  tokens: readonly number[];
  stride?: readonly [number, number, number];
}

/** A stretch of a transcript with its times (Python's `chunks`). */
export interface TimestampedChunk {
  language?: string | null;
  timestamp?: [number | null, number | null];
  text: string;
}

interface OpenChunk {
  language: string | null;
  timestamp: [number | null, number | null];
  text: string;
}

export interface Transcript {
  text: string;
  chunks?: TimestampedChunk[];
}

/** Python's round(x, 2): correctly rounded, ties (only exact eighths can tie) to even. */
export function round2(x: number): number {
  const eighths = x * 8;
  if (Number.isInteger(eighths) && eighths % 2 !== 0) {
    const hundredths = Math.floor(x * 100);
    return (hundredths % 2 === 0 ? hundredths : hundredths + 1) / 100;
  }
  return Number(x.toFixed(2));
}

/** Drops a <|startofprev|> prompt: everything before <|startoftranscript|> (all of it without one). */
export function stripPrompt(tokens: readonly number[], vocab: WhisperVocabulary): number[] {
  if (tokens.length === 0 || tokens[0] !== vocab.promptId) return [...tokens];
  const start = tokens.indexOf(vocab.startId);
  return start < 0 ? [] : tokens.slice(start);
}

export async function decodeTranscript(
  outputs: readonly TranscribedChunk[],
  vocab: WhisperVocabulary,
  returnTimestamps: boolean,
  timePrecision: number,
  segmentSize = 1500,
  returnLanguage = false,
): Promise<Transcript> {
  const { timestampBegin } = vocab;
  let lastLanguage: string | null = null;
  const chunks: OpenChunk[] = [];
  const newChunk = (): OpenChunk => ({ language: lastLanguage, timestamp: [null, null], text: '' });
  let chunk = newChunk();
  let timeOffset = 0;
  let previous: number[][] = [];
  let skip = false;
  const text = async (): Promise<string> =>
    filterTimestamps(await vocab.decode(longestCommonSequence(previous)));

  for (const output of outputs) {
    const tokens = stripPrompt(output.tokens, vocab);
    let lastTimestamp: number | undefined;
    let firstTimestamp = timestampBegin;
    let curMax = 0;
    let prevSegmentsLength = 0;
    let penultimate = 0;
    let rightStrideStart: number | undefined;
    if (output.stride !== undefined) {
      const [chunkLength, left, right] = output.stride;
      timeOffset -= left;
      rightStrideStart = chunkLength - right;
      if (left) firstTimestamp = left / timePrecision + timestampBegin;
      if (right) {
        for (let i = tokens.length - 1; i >= 0; i -= 1) {
          const token = tokens[i] as number;
          if (token < timestampBegin) continue;
          // Several timestamps may lie in the right stride; the last one is always skipped.
          if (
            lastTimestamp !== undefined &&
            (token - timestampBegin) * timePrecision < rightStrideStart
          )
            break;
          lastTimestamp = token;
        }
      }
    }
    let current: number[] = [];
    for (let i = 0; i < tokens.length; i += 1) {
      const token = tokens[i] as number;
      if (vocab.isSpecial(token)) {
        const language = vocab.languages.get(token);
        if (language === undefined) continue;
        if (lastLanguage !== null && language !== lastLanguage && !returnTimestamps) {
          previous.push(current);
          chunk.text = await text();
          chunks.push(chunk);
          previous = [];
          current = [];
          chunk = newChunk();
        }
        chunk.language = language;
        lastLanguage = language;
      } else if (token >= timestampBegin) {
        const timestamp = (token - timestampBegin) * timePrecision;
        if (timestamp < curMax) {
          // A new segment of long-form output: its timestamps start again from 0.
          const singleEnding =
            i >= 2 &&
            !(
              (tokens[i - 1] as number) >= timestampBegin &&
              (tokens[i - 2] as number) >= timestampBegin
            );
          if (singleEnding) prevSegmentsLength += timePrecision * segmentSize;
          else {
            curMax = penultimate;
            prevSegmentsLength += penultimate;
          }
        }
        penultimate = curMax;
        curMax = timestamp;
        const time = round2(
          (token - timestampBegin) * timePrecision + timeOffset + prevSegmentsLength,
        );
        if (lastTimestamp !== undefined && token >= lastTimestamp) {
          // Inside the right stride: resolved by the next chunk; its pair is skipped too.
          skip = true;
        } else if (skip || (previous.length > 0 && token < firstTimestamp)) {
          skip = false;
        } else if (chunk.timestamp[0] === null) {
          chunk.timestamp[0] = time;
        } else if (time !== chunk.timestamp[0]) {
          // (An end equal to the start is the model repeating a start token: it stays a start.)
          chunk.timestamp[1] = time;
          previous.push(current);
          chunk.text = await text();
          chunks.push(chunk);
          previous = [];
          current = [];
          chunk = newChunk();
        }
      } else {
        current.push(token);
      }
    }
    if (output.stride !== undefined) timeOffset += output.stride[0] - output.stride[2];
    if (current.length > 0) previous.push(current);
    else if (!previous.some((p) => p.length > 0)) {
      chunk = newChunk();
      previous = [];
    }
  }
  if (previous.length > 0) {
    // Without timestamps every token lands here; with them, the audio ended inside a chunk.
    chunk.text = await text();
    chunks.push(chunk);
  }
  const full = chunks.map((c) => c.text).join('');
  if (!returnTimestamps && !returnLanguage) return { text: full };
  return {
    text: full,
    chunks: chunks.map((c) => ({
      ...(returnLanguage ? { language: c.language } : {}),
      ...(returnTimestamps ? { timestamp: c.timestamp } : {}),
      text: c.text,
    })),
  };
}

/** Python's _find_longest_common_sequence: each next run joined where it best overlaps the last. */
export function longestCommonSequence(sequences: readonly (readonly number[])[]): number[] {
  let left = [...(sequences[0] ?? [])];
  const total: number[] = [];
  for (const right of sequences.slice(1)) {
    let best = 0;
    let indices: [number, number, number, number] = [left.length, left.length, 0, 0];
    for (let i = 1; i < left.length + right.length; i += 1) {
      const eps = i / 10000;
      const leftStart = Math.max(0, left.length - i);
      const leftStop = Math.min(left.length, left.length + right.length - i);
      const rightStart = Math.max(0, i - left.length);
      let matches = 0;
      for (let k = 0; k < leftStop - leftStart; k += 1)
        if (left[leftStart + k] === right[rightStart + k]) matches += 1;
      const matching = matches / i + eps;
      if (matches > 1 && matching > best) {
        best = matching;
        indices = [leftStart, leftStop, rightStart, Math.min(right.length, i)];
      }
    }
    const [leftStart, leftStop, rightStart, rightStop] = indices;
    // Inside the overlap the left run is trusted for its first half, the right for the second.
    total.push(...left.slice(0, Math.floor((leftStop + leftStart) / 2)));
    left = right.slice(Math.floor((rightStop + rightStart) / 2));
  }
  return [...total, ...left];
}

/** Python's decode(output_offsets=True): the text and time span of each timestamped segment. */
export async function segmentOffsets(
  tokens: readonly number[],
  vocab: WhisperVocabulary,
  timePrecision = 0.02,
  segmentSize = 1500,
): Promise<{ text: string; timestamp: [number, number] }[]> {
  const { timestampBegin } = vocab;
  const isTime = tokens.map((t) => t >= timestampBegin);
  const positions = isTime.flatMap((t, i) => (t ? [i] : []));
  const consecutive: number[] = [];
  for (let i = 0; i + 1 < isTime.length; i += 1)
    if (isTime[i] && isTime[i + 1]) consecutive.push(i + 1);
  if (consecutive.length === 0 && positions.length <= 1) return [];
  const lastTime = (positions.at(-1) as number) + 1;
  if (!consecutive.includes(lastTime)) consecutive.push(lastTime);
  const offsets: { text: string; timestamp: [number, number] }[] = [];
  let lastSlice = positions[0] as number;
  let curMax = 0;
  let prevSegmentsLength = 0;
  for (const slice of consecutive) {
    const sliced = tokens.slice(lastSlice, slice);
    if (sliced.length > 1) {
      const start = (sliced[0] as number) - timestampBegin;
      const end = (sliced.at(-1) as number) - timestampBegin;
      if (start < curMax) {
        const singleEnding =
          lastSlice >= 2 &&
          !(
            (tokens[lastSlice - 2] as number) >= timestampBegin &&
            (tokens[lastSlice - 1] as number) >= timestampBegin
          );
        prevSegmentsLength += singleEnding ? segmentSize : curMax;
      }
      curMax = end;
      const text = filterTimestamps(await vocab.decode(sliced));
      offsets.push({
        text,
        timestamp: [
          start * timePrecision + prevSegmentsLength * timePrecision,
          end * timePrecision + prevSegmentsLength * timePrecision,
        ],
      });
    }
    lastSlice = slice;
  }
  return offsets;
}

/** Timestamp tokens decode to `<|1.08|>`; Python removes them from every text. */
function filterTimestamps(text: string): string {
  return text.replace(/<\|\d+\.\d+\|>/g, '');
}
