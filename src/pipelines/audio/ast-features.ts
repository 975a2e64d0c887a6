// ASTFeatureExtractor (Audio Spectrogram Transformer), the path transformers takes with torchaudio
// installed: Kaldi fbank features (kaldi-fbank.ts, Hann window, num_mel_bins filters), zero frames
// appended or the end cut to max_length frames, then (x - mean) / (2 * std) with the extractor's
// AudioSet statistics. Output: `[max_length][num_mel_bins]`, the model's input_values per clip.
import { ModelFolderError } from '../../errors.ts';
import { kaldiFbank, type KaldiFbankOptions } from './kaldi-fbank.ts';
import { preprocessorFields } from './preprocessor-fields.ts';

export interface AstFeatures {
  kind: 'ast';
  samplingRate: number;
  melBins: number;
  /** Frames every clip is padded or cut to. */
  maxLength: number;
  doNormalize: boolean;
  mean: number;
  std: number;
}

export function compileAstFeatures(raw: Record<string, unknown>, folder: string): AstFeatures {
  const { int, real } = preprocessorFields(raw, folder);
  const features: AstFeatures = {
    kind: 'ast',
    samplingRate: int('sampling_rate', 16_000),
    melBins: int('num_mel_bins', 128),
    maxLength: int('max_length', 1024),
    doNormalize: raw['do_normalize'] !== false,
    // Python's defaults: the AudioSet statistics.
    mean: real('mean', -4.2677393),
    std: real('std', 4.5689974),
  };
  if (features.std === 0)
    throw new ModelFolderError(`${folder}/preprocessor_config.json: std must not be 0`, {
      field: 'std',
    });
  return features;
}

export function astFbankOptions(f: AstFeatures): KaldiFbankOptions {
  return { samplingRate: f.samplingRate, melBins: f.melBins, window: 'hanning' };
}

/** The model's input_values for one clip (mono, at the extractor's rate): maxLength x melBins. */
export function astInputValues(audio: Float32Array, f: AstFeatures, field = 'input'): Float32Array {
  const { data, frames } = kaldiFbank(audio, astFbankOptions(f), field);
  // Frames past the clip are zeros in fbank space (before normalisation), as Python pads them.
  const out = new Float32Array(f.maxLength * f.melBins);
  out.set(data.subarray(0, Math.min(frames, f.maxLength) * f.melBins));
  if (f.doNormalize) {
    const scale = 2 * f.std;
    for (let i = 0; i < out.length; i += 1) out[i] = ((out[i] as number) - f.mean) / scale;
  }
  return out;
}
