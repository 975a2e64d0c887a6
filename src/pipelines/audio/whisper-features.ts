// WhisperFeatureExtractor's log-mel spectrogram, as its torch path computes it: the clip padded
// with zeros (or cut) to chunk_length seconds, a centred STFT (reflect padding, periodic Hann
// window of n_fft, hop hop_length) with the last frame dropped, power through the slaney mel
// filters, log10 floored at 1e-10 and at 8 below the clip's maximum, then (x + 4) / 4.
// Output: `[feature_size][frames]` row after row, frames = chunk_length * rate / hop.
import { ModelFolderError } from '../../errors.ts';
import { Fft } from './fft.ts';
import { melFilterBank } from './mel-filters.ts';
import { preprocessorFields } from './preprocessor-fields.ts';

export interface WhisperFeatures {
  kind: 'whisper';
  samplingRate: number;
  featureSize: number;
  nFft: number;
  hopLength: number;
  /** Samples every clip is padded or cut to: chunk_length * sampling_rate. */
  nSamples: number;
  paddingValue: number;
}

export function compileWhisperFeatures(
  raw: Record<string, unknown>,
  folder: string,
): WhisperFeatures {
  const { int } = preprocessorFields(raw, folder);
  if (typeof raw['dither'] === 'number' && raw['dither'] !== 0)
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: dither ${raw['dither']} adds random noise; set it to 0 for reproducible features`,
      { field: 'dither' },
    );
  const samplingRate = int('sampling_rate', 16_000);
  return {
    kind: 'whisper',
    samplingRate,
    featureSize: int('feature_size', 80),
    nFft: int('n_fft', 400),
    hopLength: int('hop_length', 160),
    nSamples: int('chunk_length', 30) * samplingRate,
    paddingValue: typeof raw['padding_value'] === 'number' ? raw['padding_value'] : 0,
  };
}

const banks = new Map<string, { filters: Float64Array[]; window: Float64Array; fft: Fft }>();

function setupFor(f: WhisperFeatures): { filters: Float64Array[]; window: Float64Array; fft: Fft } {
  const key = `${f.samplingRate}:${f.featureSize}:${f.nFft}`;
  let setup = banks.get(key);
  if (setup === undefined) {
    setup = {
      filters: melFilterBank({
        frequencyBins: 1 + Math.floor(f.nFft / 2),
        melFilters: f.featureSize,
        minFrequency: 0,
        maxFrequency: 8000,
        samplingRate: f.samplingRate,
        scale: 'slaney',
        norm: 'slaney',
      }),
      // torch.hann_window(n) is periodic.
      window: Float64Array.from(
        { length: f.nFft },
        (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / f.nFft),
      ),
      fft: new Fft(f.nFft),
    };
    banks.set(key, setup);
  }
  return setup;
}

/**
 * The log-mel features of one clip (mono, at the extractor's rate): `[featureSize * frames]`.
 * `samples`: the length it is padded or cut to; the clip's own length is Python's
 * truncation=False (long-form speech recognition).
 */
export function whisperLogMel(
  audio: Float32Array,
  f: WhisperFeatures,
  samples = f.nSamples,
): { data: Float32Array; frames: number } {
  const { filters, window, fft } = setupFor(f);
  const n = samples;
  const signal = new Float64Array(n).fill(f.paddingValue);
  signal.set(audio.length > n ? audio.subarray(0, n) : audio);
  const half = Math.floor(f.nFft / 2);
  // Reflect padding (numpy/torch "reflect": the edge sample is not repeated).
  const at = (i: number): number => {
    let j = i - half;
    if (j < 0) j = -j;
    if (j >= n) j = 2 * (n - 1) - j;
    return signal[j] as number;
  };
  const frames = Math.floor(n / f.hopLength);
  const bins = half + 1;
  const logSpec = new Float64Array(f.featureSize * frames);
  const frame = new Float64Array(f.nFft);
  const power = new Float64Array(bins);
  let max = -Infinity;
  for (let t = 0; t < frames; t += 1) {
    let silent = true;
    for (let i = 0; i < f.nFft; i += 1) {
      const v = at(t * f.hopLength + i) * (window[i] as number);
      frame[i] = v;
      if (v !== 0) silent = false;
    }
    if (silent) power.fill(0);
    else {
      const { re, im } = fft.real(frame);
      for (let b = 0; b < bins; b += 1) power[b] = (re[b] as number) ** 2 + (im[b] as number) ** 2;
    }
    for (let m = 0; m < f.featureSize; m += 1) {
      const row = filters[m] as Float64Array;
      let sum = 0;
      for (let b = 0; b < bins; b += 1) sum += (row[b] as number) * (power[b] as number);
      const value = Math.log10(Math.max(sum, 1e-10));
      logSpec[m * frames + t] = value;
      if (value > max) max = value;
    }
  }
  const floor = max - 8;
  const data = Float32Array.from(logSpec, (v) => (Math.max(v, floor) + 4) / 4);
  return { data, frames };
}
