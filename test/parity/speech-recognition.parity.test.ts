import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AudioInput } from '../../src/pipelines/audio/audio-decode.ts';
import {
  SpeechRecognitionPipeline,
  type SpeechRecognitionOptions,
} from '../../src/pipelines/audio/speech-recognition.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens, type GoldenCase } from './goldens.ts';
import { forPipeline, GOLDEN, parityCase, RERUN } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { longSignal } from '../helpers/long-signal.ts';

const MODEL = 'whisper-speech-recognition';
const load = useModelStore();
const goldens = readGoldens(MODEL);
const RATE = 16_000;

interface Call {
  inputs: string[];
  options: {
    return_timestamps?: boolean;
    return_language?: boolean;
    chunk_length_s?: number;
    stride_length_s?: number[];
  };
  generate_kwargs: { max_new_tokens: number; num_beams: number; language?: string; task?: string };
}

interface GenerationCase {
  name: string;
  audio: string;
  max_new_tokens: number;
  options: {
    num_beams: number;
    language?: string;
    task?: 'transcribe' | 'translate';
    return_timestamps?: boolean;
  };
  tokens: number[];
}

function optionsOf(call: Call): SpeechRecognitionOptions {
  const { options: o, generate_kwargs: g } = call;
  return {
    maxNewTokens: g.max_new_tokens,
    numBeams: g.num_beams,
    ...(g.language !== undefined ? { language: g.language } : {}),
    ...(g.task !== undefined ? { task: g.task as 'transcribe' | 'translate' } : {}),
    ...(o.return_timestamps !== undefined ? { returnTimestamps: o.return_timestamps } : {}),
    ...(o.return_language !== undefined ? { returnLanguage: o.return_language } : {}),
    ...(o.chunk_length_s !== undefined ? { chunkLengthS: o.chunk_length_s } : {}),
    ...(o.stride_length_s !== undefined
      ? { strideLengthS: o.stride_length_s as [number, number] }
      : {}),
  };
}

function inputOf(item: string): AudioInput {
  return item === 'long_signal'
    ? { pcm: longSignal(), samplingRate: RATE }
    : join(modelPath(MODEL), item);
}

describe('automaticSpeechRecognition', forPipeline('automaticSpeechRecognition'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const c = call as unknown as Call;
        const pipeline = new SpeechRecognitionPipeline(await load(MODEL), optionsOf(c));
        // Every case runs as one batch; Python ran one clip at a time unless batch_size says.
        return pipeline.run(c.inputs.map(inputOf));
      });
    }
  });

  describe('generate() token ids', GOLDEN, () => {
    const cases = (goldens as unknown as { generation: GenerationCase[] }).generation;
    for (const name of [...new Set(cases.map((c) => c.name.split(':')[0] as string))]) {
      // The three clips of a case as one batch; Python generated each alone.
      it(name, async () => {
        const group = cases.filter((c) => c.name.startsWith(`${name}:`));
        const o = (group[0] as GenerationCase).options;
        const pipeline = new SpeechRecognitionPipeline(await load(MODEL), {
          maxNewTokens: (group[0] as GenerationCase).max_new_tokens,
          numBeams: o.num_beams,
          ...(o.language !== undefined ? { language: o.language } : {}),
          ...(o.task !== undefined ? { task: o.task } : {}),
          returnTimestamps: o.return_timestamps === true,
        });
        const out = await pipeline.generateTokens(group.map((c) => inputOf(c.audio)));
        expect(out.map((r) => r.tokens)).toEqual(group.map((c) => c.tokens));
      });
    }
  });

  describe('batch independence', () => {
    const golden = goldens.pipeline.find((g) => g.name === 'timestamps_en') as GoldenCase;
    it('clips reversed, as bytes, one twice: each answers as alone', RERUN, async ({ task }) => {
      const c = golden.call as unknown as Call;
      const pipeline = new SpeechRecognitionPipeline(await load(MODEL), optionsOf(c));
      const bytes = await Promise.all(
        c.inputs.map(async (p) => new Uint8Array(await readFile(join(modelPath(MODEL), p)))),
      );
      const out = await pipeline.run([...bytes].reverse().concat(bytes.slice(0, 1)));
      expect(out.at(-1)).toEqual(out.at(-2));
      const comparison = compareDeep(out.slice(0, -1).reverse(), golden.output, 1e-4);
      task.meta.maxAbsDiff = comparison.maxAbsDiff;
      expect(comparison.differences).toEqual([]);
    });
  });
});
