// audioClassification with an Audio Spectrogram Transformer against the real Python pipeline
// (scripts/models/kit/ast_audio.py): the extractor chosen from preprocessor_config.json, the
// ASTFeatureExtractor features themselves (torchaudio's Kaldi fbank, padded or cut, normalised)
// and the pipeline's scores, alone and as one batch.
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  AudioClassificationPipeline,
  compileClassifierFeatures,
} from '../../src/pipelines/audio/audio-classification.ts';
import { astInputValues, compileAstFeatures } from '../../src/pipelines/audio/ast-features.ts';
import { melFilterBank } from '../../src/pipelines/audio/mel-filters.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase, unbatch } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'ast-audio-classification';
const RATE = 16_000;
const load = useModelStore();

interface Packed {
  shape: number[];
  base64: string;
}
interface AstGoldens {
  kaldi_mel_banks: {
    num_bins: number;
    padded_window_size: number;
    sample_frequency: number;
    low_freq: number;
    banks: Packed;
  };
  ast_features: {
    name: string;
    audio?: string;
    /** The extractor's input: the clip at 16 kHz as Python's pipeline resampled it, or a signal. */
    input_16k: Packed;
    input_values: Packed;
  }[];
}
const goldens = readGoldens(MODEL) as unknown as ReturnType<typeof readGoldens> & AstGoldens;

function unpack(packed: Packed): number[] {
  const bytes = Buffer.from(packed.base64, 'base64');
  return Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4));
}

const file = (rel: string): string => join(modelPath(MODEL), rel);

describe('audioClassification (AST)', forPipeline('audioClassification'), () => {
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

  describe('ASTFeatureExtractor features equal Python (Kaldi fbank)', GOLDEN, () => {
    for (const golden of goldens.ast_features) {
      it(golden.name, async ({ task }) => {
        // The folder's preprocessor_config.json, as the pipeline reads it.
        const model = await load(MODEL);
        const features = compileAstFeatures(model.preprocessor ?? {}, model.folder);
        // The fbank on Python's own 16 kHz input: the resampler's 1e-5 is checked elsewhere
        // (audio-classification.parity.test.ts) and end to end by the pipeline cases above.
        const audio = Float32Array.from(unpack(golden.input_16k));
        const values = astInputValues(audio, features);
        const expected = unpack(golden.input_values);
        expect(golden.input_values.shape).toEqual([features.maxLength, features.melBins]);
        const comparison = compareDeep(Array.from(values), expected, 1e-4);
        task.meta.maxAbsDiff = comparison.maxAbsDiff;
        expect(comparison.differences).toEqual([]);
      });
    }
  });

  it(
    "builds Kaldi's mel banks as torchaudio does (triangles straight in mels)",
    GOLDEN,
    ({ task }) => {
      const golden = goldens.kaldi_mel_banks;
      const bins = golden.padded_window_size / 2;
      const filters = melFilterBank({
        frequencyBins: bins + 1,
        melFilters: golden.num_bins,
        minFrequency: golden.low_freq,
        maxFrequency: golden.sample_frequency / 2,
        samplingRate: golden.sample_frequency,
        scale: 'kaldi',
        norm: undefined,
        triangularizeInMelSpace: true,
      });
      // torchaudio's banks stop before the Nyquist bin, which fbank pads with a zero weight.
      expect(filters.every((row) => row[bins] === 0)).toBe(true);
      const ours = filters.flatMap((row) => Array.from(row.subarray(0, bins)));
      // torch computes the bin mels in float32 (an ulp of ~1e-4 mel over ~70-mel slopes): ~2e-6.
      const comparison = compareDeep(ours, unpack(golden.banks), 1e-5);
      task.meta.maxAbsDiff = comparison.maxAbsDiff;
      expect(comparison.differences).toEqual([]);
    },
  );

  it('picks the extractor from feature_extractor_type and refuses one it lacks', async () => {
    const model = await load(MODEL);
    expect(compileClassifierFeatures(model.preprocessor, model.folder).kind).toBe('ast');
    expect(() =>
      compileClassifierFeatures({ feature_extractor_type: 'SeamlessM4TFeatureExtractor' }, 'x'),
    ).toThrow(/ASTFeatureExtractor/);
  });

  it('refuses a clip shorter than one analysis frame, naming the input', async () => {
    const pipeline = new AudioClassificationPipeline(await load(MODEL));
    await expect(
      pipeline.run([{ pcm: new Float32Array(399), samplingRate: RATE }]),
    ).rejects.toMatchObject({ name: 'InputError', field: 'inputs[0]' });
  });
});
