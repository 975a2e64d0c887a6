// Wav2Vec2FeatureExtractor (also HuBERT's, WavLM's, Data2VecAudio's): the waveform itself is the
// model's input, optionally normalised to zero mean and unit variance per clip,
// (x - mean) / sqrt(var + 1e-7), as Python's zero_mean_unit_var_norm does for an unpadded clip.
import { ModelFolderError } from '../../errors.ts';
import { preprocessorFields } from './preprocessor-fields.ts';

export interface Wav2Vec2Features {
  kind: 'wav2vec2';
  samplingRate: number;
  doNormalize: boolean;
  returnAttentionMask: boolean;
}

export function compileWav2Vec2Features(
  raw: Record<string, unknown>,
  folder: string,
): Wav2Vec2Features {
  const rate = preprocessorFields(raw, folder).int('sampling_rate', 16_000);
  if ((raw['feature_size'] ?? 1) !== 1)
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: feature_size must be 1 for a waveform model`,
      { field: 'feature_size' },
    );
  return {
    kind: 'wav2vec2',
    samplingRate: rate,
    doNormalize: raw['do_normalize'] !== false,
    returnAttentionMask: raw['return_attention_mask'] === true,
  };
}

/** The model's input_values for one clip (mono, at the model's rate). */
export function wav2vec2InputValues(audio: Float32Array, features: Wav2Vec2Features): Float32Array {
  if (!features.doNormalize) return audio;
  let mean = 0;
  for (const v of audio) mean += v;
  mean /= audio.length;
  let variance = 0;
  for (const v of audio) variance += (v - mean) ** 2;
  variance /= audio.length;
  const scale = 1 / Math.sqrt(variance + 1e-7);
  return Float32Array.from(audio, (v) => (v - mean) * scale);
}
