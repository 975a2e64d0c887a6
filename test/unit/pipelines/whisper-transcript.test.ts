// Whisper's timestamp-token parsing on hand-made token sequences, against what transformers'
// tokenizer (_decode_asr and decode(output_offsets=True)) made of the same sequences in the model
// kit: the paths random weights may never take (a prompt, a language token, a single ending, a
// restart after a 30 s reset, a repeated start, chunks overlapping by their strides).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { segmentOf } from '../../../src/pipelines/audio/whisper-generate.ts';
import {
  decodeTranscript,
  longestCommonSequence,
  round2,
  segmentOffsets,
  type WhisperVocabulary,
} from '../../../src/pipelines/audio/whisper-transcript.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';
import { readGoldens } from '../../parity/goldens.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'whisper-speech-recognition',
);

interface ParsingCase {
  name: string;
  tokens?: number[];
  chunks?: { tokens: number[]; stride: [number, number, number] }[];
  decode_offsets?: unknown;
  asr_text: unknown;
  asr_timestamps: unknown;
}

const cases = (
  readGoldens('whisper-speech-recognition') as unknown as {
    timestamp_parsing: ParsingCase[];
  }
).timestamp_parsing;

async function vocabulary(): Promise<WhisperVocabulary> {
  const tokenizer = await TextTokenizer.load(MODEL);
  const id = (t: string): number => tokenizer.tokenId(t) as number;
  const eos = id('<|endoftext|>');
  const begin = id('<|notimestamps|>') + 1;
  const languages = new Map(['en', 'fr'].map((code) => [id(`<|${code}|>`), code]));
  return {
    timestampBegin: begin,
    promptId: id('<|startofprev|>'),
    startId: id('<|startoftranscript|>'),
    isSpecial: (t) => t >= eos && t < begin,
    languages,
    decode: (ids) => tokenizer.decode(ids, false),
  };
}

describe('Whisper transcript parsing equals the tokenizer', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const vocab = await vocabulary();
      const outputs = c.chunks ?? [{ tokens: c.tokens as number[] }];
      expect(await decodeTranscript(outputs, vocab, false, 0.02)).toEqual(c.asr_text);
      expect(await decodeTranscript(outputs, vocab, true, 0.02)).toEqual(c.asr_timestamps);
      if (c.decode_offsets !== undefined)
        expect(await segmentOffsets(c.tokens as number[], vocab)).toEqual(c.decode_offsets);
    });
  }
});

describe('Whisper segments and merging', () => {
  it("keeps a generation's tokens up to its last timestamp pair and seeks to that pair", () => {
    const settings = { timestampBegin: 100, inputStride: 2 };
    // <|0.00|> a b <|1.00|><|1.00|> c <|2.00|>: a lone final timestamp ends the whole segment.
    expect(segmentOf([100, 1, 2, 150, 150, 3, 200], 3000, settings)).toEqual({
      tokens: [100, 1, 2, 150, 150, 3, 200],
      offset: 3000,
    });
    // ... c d: text after the last pair is dropped and read again from <|1.00|> (frame 100).
    expect(segmentOf([100, 1, 2, 150, 150, 3, 4], 3000, settings)).toEqual({
      tokens: [100, 1, 2, 150, 150],
      offset: 100,
    });
    expect(segmentOf([1, 2, 3], 1200, settings)).toEqual({ tokens: [1, 2, 3], offset: 1200 });
    expect(segmentOf([], 3000, settings)).toEqual({ tokens: [], offset: 3000 });
  });

  it('joins overlapping runs where they agree, each side trusted for its half', () => {
    expect(
      longestCommonSequence([
        [1, 2, 3, 4],
        [3, 4, 5],
      ]),
    ).toEqual([1, 2, 3, 4, 5]);
    expect(
      longestCommonSequence([
        [1, 2],
        [7, 8],
      ]),
    ).toEqual([1, 2, 7, 8]);
    expect(
      longestCommonSequence([
        [1, 2, 3, 4, 9],
        [2, 3, 4, 5],
      ]),
    ).toEqual([1, 2, 3, 4, 5]);
  });

  it("rounds as Python's round(x, 2), ties to even", () => {
    expect([0.125, 0.375, 1.005, 2.675, 29.999, 4.0].map(round2)).toEqual([
      0.12, 0.38, 1.0, 2.67, 30, 4,
    ]);
  });
});
