import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AudioClassificationPipeline } from '../../src/pipelines/audio/audio-classification.ts';
import { decodeAudio, mixdown } from '../../src/pipelines/audio/audio-decode.ts';
import { resample } from '../../src/pipelines/audio/resample.ts';
import {
  compileWav2Vec2Features,
  wav2vec2InputValues,
} from '../../src/pipelines/audio/wav2vec2-features.ts';
import {
  compileWhisperFeatures,
  whisperLogMel,
} from '../../src/pipelines/audio/whisper-features.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, RERUN, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'wav2vec2-audio-classification';
const load = useModelStore();
const goldens = readGoldens(MODEL) as unknown as ReturnType<typeof readGoldens> & AudioGoldens;

/** A float32 array the kit wrote as base64 of its little-endian bytes. */
interface Packed {
  shape: number[];
  base64: string;
}
interface AudioGoldens {
  decoding: {
    audio: string;
    sampling_rate: number;
    channels: number;
    frames: number;
    mono: Packed;
  }[];
  resampling: { audio: string; from: number; to: number; output: Packed }[];
  wav2vec2_features: { audio: string; config: Record<string, unknown>; input_values: Packed }[];
  whisper_features: {
    name: string;
    source: string;
    config: Record<string, unknown>;
    shape: [number, number];
    head_frames: number;
    head: Packed;
    last_frames: Packed;
    rest_min: number | null;
    rest_max: number | null;
  }[];
}

function unpack(packed: Packed): number[] {
  const bytes = Buffer.from(packed.base64, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

const file = (rel: string): string => join(modelPath(MODEL), rel);

async function monoAt(rel: string, rate: number): Promise<Float32Array> {
  const decoded = await decodeAudio(file(rel), 'audio');
  return resample(mixdown(decoded.channels), decoded.samplingRate, rate);
}

/** The kit's truncation signal (kit/audio.py truncation_signal), made again here. */
function truncationSignal(): Float32Array {
  const rate = 16_000;
  return Float32Array.from(
    { length: 31 * rate },
    (_, n) =>
      0.3 * Math.sin((2 * Math.PI * 440 * n) / rate) +
      0.2 * Math.sin((2 * Math.PI * 3000 * n) / rate),
  );
}

function check(
  task: { meta: { maxAbsDiff?: number } },
  actual: number[],
  expected: number[],
  tolerance: number,
): void {
  expect(actual.length).toBe(expected.length);
  const comparison = compareDeep(actual, expected, tolerance);
  task.meta.maxAbsDiff = comparison.maxAbsDiff;
  expect(comparison.differences).toEqual([]);
}

describe('audioClassification', forPipeline('audioClassification'), () => {
  describe('pipeline', () => {
    for (const golden of goldens.pipeline) {
      parityCase(golden, async ({ call }) => {
        const { top_k: topK, function_to_apply: functionToApply } = call.options as {
          top_k?: number | null;
          function_to_apply?: 'softmax' | 'sigmoid' | 'none';
        };
        const pipeline = new AudioClassificationPipeline(await load(MODEL), {
          ...(topK !== undefined ? { topK } : {}),
          ...(functionToApply !== undefined ? { functionToApply } : {}),
        });
        const paths = asBatch(call.inputs).map((p) => file(p as string));
        return unbatch(call.inputs, await pipeline.run(paths));
      });
    }
  });

  describe('batch independence', () => {
    const batch = goldens.pipeline.find((g) => g.name === 'batch');
    if (batch === undefined) throw new Error('the goldens have no batch case');
    parityCase(
      batch,
      async ({ call }) => {
        // Reversed, a clip twice, and bytes for paths: every row still answers as alone.
        const pipeline = new AudioClassificationPipeline(await load(MODEL), { topK: 1 });
        const paths = (call.inputs as string[]).map(file);
        const bytes = await Promise.all(paths.map(async (p) => new Uint8Array(await readFile(p))));
        const out = await pipeline.run([...bytes].reverse().concat(bytes.slice(0, 1)));
        expect(out.at(-1)).toEqual(out.at(-2));
        return out.slice(0, -1).reverse();
      },
      { rerun: true },
    );
  });

  describe('decoding equals libsndfile', GOLDEN, () => {
    for (const golden of goldens.decoding) {
      it(golden.audio, async ({ task }) => {
        const decoded = await decodeAudio(file(golden.audio), 'audio');
        expect(decoded.samplingRate).toBe(golden.sampling_rate);
        expect(decoded.channels).toHaveLength(golden.channels);
        // Lossless formats are exact; MP3 and Vorbis decoders differ in float rounding only.
        const lossy = /\.(mp3|ogg)$/.test(golden.audio);
        check(
          task,
          Array.from(mixdown(decoded.channels)),
          unpack(golden.mono),
          lossy ? 1e-5 : 1e-7,
        );
      });
    }
  });

  describe('resampling equals torchaudio', GOLDEN, () => {
    for (const golden of goldens.resampling) {
      it(`${golden.audio}: ${golden.from} -> ${golden.to} Hz`, async ({ task }) => {
        const out = await monoAt(golden.audio, golden.to);
        check(task, Array.from(out), unpack(golden.output), 1e-5);
      });
    }
  });

  describe('Wav2Vec2FeatureExtractor', GOLDEN, () => {
    for (const golden of goldens.wav2vec2_features) {
      it(golden.audio, async ({ task }) => {
        const features = compileWav2Vec2Features(golden.config, 'goldens');
        const values = wav2vec2InputValues(
          await monoAt(golden.audio, features.samplingRate),
          features,
        );
        check(task, Array.from(values), unpack(golden.input_values), 1e-4);
      });
    }
  });

  describe('WhisperFeatureExtractor log-mel', GOLDEN, () => {
    for (const golden of goldens.whisper_features) {
      it(golden.name, async ({ task }) => {
        const features = compileWhisperFeatures(golden.config, 'goldens');
        // Each stage on Python's own input: a resampled clip is torchaudio's output (the
        // resampling's 1e-5 is checked above and would be magnified in near-silent mel bins).
        const resampled = goldens.resampling.find((r) => r.audio === golden.source);
        const audio =
          golden.source === 'truncation_signal'
            ? truncationSignal()
            : resampled !== undefined
              ? Float32Array.from(unpack(resampled.output))
              : await monoAt(golden.source, features.samplingRate);
        const { data, frames } = whisperLogMel(audio, features);
        const [mels, goldenFrames] = golden.shape;
        expect([features.featureSize, frames]).toEqual([mels, goldenFrames]);
        const pick = (from: number, to: number): number[] => {
          const out: number[] = [];
          for (let m = 0; m < mels; m += 1)
            out.push(...data.subarray(m * frames + from, m * frames + to));
          return out;
        };
        const head = compareDeep(pick(0, golden.head_frames), unpack(golden.head), 1e-4);
        const last = compareDeep(pick(frames - 8, frames), unpack(golden.last_frames), 1e-4);
        task.meta.maxAbsDiff = Math.max(head.maxAbsDiff, last.maxAbsDiff);
        expect(head.differences).toEqual([]);
        expect(last.differences).toEqual([]);
        if (golden.rest_min !== null && golden.rest_min === golden.rest_max) {
          const rest = pick(golden.head_frames, frames);
          const floor = golden.rest_min;
          expect(rest.every((v) => Math.abs(v - floor) <= 1e-4)).toBe(true);
        }
      });
    }
  });

  it('takes raw PCM like the file it came from', RERUN, async () => {
    const pipeline = new AudioClassificationPipeline(await load(MODEL), { topK: null });
    const path = file('audio/chirp_22k_stereo.flac');
    const decoded = await decodeAudio(path, 'audio');
    const [a, b] = await pipeline.run([
      path,
      { pcm: mixdown(decoded.channels), samplingRate: decoded.samplingRate },
    ]);
    expect(b).toEqual(a);
    expect(a).toHaveLength(6);
  });
});
