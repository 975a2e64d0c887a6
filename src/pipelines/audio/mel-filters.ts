// Triangular mel filter banks as transformers' audio_utils.mel_filter_bank builds them (the
// "slaney" mel scale and area normalisation Whisper uses, HTK's scale, or Kaldi's): filters centred
// on points evenly spaced in mels, over FFT bins evenly spaced from 0 to half the sampling rate.
// Whisper's triangles are straight in Hertz; Kaldi's (torchaudio.compliance.kaldi.get_mel_banks)
// are straight in mels, which `triangularizeInMelSpace` selects.

/** 'kaldi' is HTK's curve written with the natural log (1127 ln(1 + f/700)), as Kaldi computes it. */
export type MelScale = 'slaney' | 'htk' | 'kaldi';

const MIN_LOG_HERTZ = 1000;
const MIN_LOG_MEL = 15;
const LOG_STEP = 27 / Math.log(6.4);

export function hertzToMel(hz: number, scale: MelScale): number {
  if (scale === 'htk') return 2595 * Math.log10(1 + hz / 700);
  if (scale === 'kaldi') return 1127 * Math.log(1 + hz / 700);
  return hz >= MIN_LOG_HERTZ
    ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HERTZ) * LOG_STEP
    : (3 * hz) / 200;
}

export function melToHertz(mel: number, scale: MelScale): number {
  if (scale === 'htk') return 700 * (10 ** (mel / 2595) - 1);
  if (scale === 'kaldi') return 700 * (Math.exp(mel / 1127) - 1);
  return mel >= MIN_LOG_MEL
    ? MIN_LOG_HERTZ * Math.exp((mel - MIN_LOG_MEL) / LOG_STEP)
    : (200 * mel) / 3;
}

export interface MelFilterOptions {
  frequencyBins: number;
  melFilters: number;
  minFrequency: number;
  maxFrequency: number;
  samplingRate: number;
  scale: MelScale;
  /** 'slaney': each filter scaled by 2 / its bandwidth in Hz. */
  norm: 'slaney' | undefined;
  /**
   * Kaldi's banks: each triangle is straight in mels and the bins sit at multiples of
   * samplingRate / fft size (transformers' triangularize_in_mel_space).
   */
  triangularizeInMelSpace?: boolean;
}

/** Filter weights, `[mel][bin]`, one row per mel filter. */
export function melFilterBank(o: MelFilterOptions): Float64Array[] {
  const melMin = hertzToMel(o.minFrequency, o.scale);
  const melMax = hertzToMel(o.maxFrequency, o.scale);
  const points = o.melFilters + 2;
  const inMels = o.triangularizeInMelSpace === true;
  // The filters' edges and centres: in mels for Kaldi's banks, in Hertz otherwise.
  const filterFreqs = Array.from({ length: points }, (_, i) => {
    const mel = melMin + ((melMax - melMin) * i) / (points - 1);
    return inMels ? mel : melToHertz(mel, o.scale);
  });
  const binWidth = o.samplingRate / ((o.frequencyBins - 1) * 2);
  // numpy.linspace(0, sampling_rate // 2, bins), or Kaldi's bin frequencies in mels.
  const top = Math.floor(o.samplingRate / 2);
  const fftFreqs = Array.from({ length: o.frequencyBins }, (_, i) =>
    inMels ? hertzToMel(binWidth * i, o.scale) : (top * i) / (o.frequencyBins - 1),
  );
  const filters: Float64Array[] = [];
  for (let m = 0; m < o.melFilters; m += 1) {
    const low = filterFreqs[m] as number;
    const centre = filterFreqs[m + 1] as number;
    const high = filterFreqs[m + 2] as number;
    const enorm = o.norm === 'slaney' ? 2 / (high - low) : 1;
    const row = new Float64Array(o.frequencyBins);
    for (let b = 0; b < o.frequencyBins; b += 1) {
      const f = fftFreqs[b] as number;
      const down = (f - low) / (centre - low);
      const up = (high - f) / (high - centre);
      row[b] = Math.max(0, Math.min(down, up)) * enorm;
    }
    filters.push(row);
  }
  return filters;
}
