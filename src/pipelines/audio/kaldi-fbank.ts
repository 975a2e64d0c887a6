// Kaldi's log mel filter-bank features, as torchaudio.compliance.kaldi.fbank computes them with
// its defaults (what ASTFeatureExtractor and other Kaldi-trained extractors call): frames of
// frame_length ms every frame_shift ms with snip_edges (only whole frames, none centred), each
// frame's mean removed, pre-emphasis x[i] - 0.97 x[i-1] (the first sample against itself), a
// symmetric window, zero padding to the next power of two, the power spectrum through Kaldi's mel
// banks (triangles straight in mels, 20 Hz to Nyquist), and the natural log floored at float32's
// epsilon. No dither: torchaudio's default is 0, and noise would make the features irreproducible.
import { InputError } from '../../errors.ts';
import { Fft } from './fft.ts';
import { melFilterBank } from './mel-filters.ts';

/** Kaldi's window types; 'povey' (Kaldi's own default) is the Hann window to the power 0.85. */
export type KaldiWindow = 'hanning' | 'povey' | 'hamming' | 'rectangular';

export interface KaldiFbankOptions {
  samplingRate: number;
  melBins: number;
  window: KaldiWindow;
  /** Default 25 ms. */
  frameLengthMs?: number;
  /** Default 10 ms. */
  frameShiftMs?: number;
  /** Default 0.97. */
  preemphasis?: number;
  /** Lowest mel filter edge in Hz; default 20. */
  lowFrequency?: number;
  /** Highest edge in Hz; <= 0 counts down from Nyquist (Kaldi's convention). Default 0. */
  highFrequency?: number;
}

/** torch.finfo(torch.float32).eps, Kaldi's floor before the log. */
const EPSILON = 1.1920928955078125e-7;

interface Setup {
  windowSize: number;
  windowShift: number;
  paddedSize: number;
  preemphasis: number;
  window: Float64Array;
  /** [mel][bin] over the paddedSize / 2 + 1 bins (the Nyquist bin weighs 0, as Kaldi pads it). */
  filters: Float64Array[];
  fft: Fft;
}

const setups = new Map<string, Setup>();

function setupFor(o: KaldiFbankOptions): Setup {
  const key = JSON.stringify(o);
  let setup = setups.get(key);
  if (setup !== undefined) return setup;
  // Python's int(rate * ms * 0.001), evaluated in the same order so it rounds the same way.
  const windowSize = Math.trunc(o.samplingRate * (o.frameLengthMs ?? 25) * 0.001);
  const windowShift = Math.trunc(o.samplingRate * (o.frameShiftMs ?? 10) * 0.001);
  if (windowSize < 2 || windowShift < 1)
    throw new RangeError(`Kaldi fbank frames of ${windowSize} samples every ${windowShift}`);
  const paddedSize = 2 ** Math.ceil(Math.log2(windowSize));
  const nyquist = o.samplingRate / 2;
  const high = o.highFrequency ?? 0;
  setup = {
    windowSize,
    windowShift,
    paddedSize,
    preemphasis: o.preemphasis ?? 0.97,
    window: kaldiWindow(o.window, windowSize),
    filters: melFilterBank({
      frequencyBins: paddedSize / 2 + 1,
      melFilters: o.melBins,
      minFrequency: o.lowFrequency ?? 20,
      maxFrequency: high <= 0 ? high + nyquist : high,
      samplingRate: o.samplingRate,
      scale: 'kaldi',
      norm: undefined,
      triangularizeInMelSpace: true,
    }),
    fft: new Fft(paddedSize),
  };
  setups.set(key, setup);
  return setup;
}

function kaldiWindow(type: KaldiWindow, size: number): Float64Array {
  // torch.hann_window / hamming_window with periodic=False: symmetric over size - 1.
  const a = (2 * Math.PI) / (size - 1);
  return Float64Array.from({ length: size }, (_, i) => {
    if (type === 'rectangular') return 1;
    if (type === 'hamming') return 0.54 - 0.46 * Math.cos(a * i);
    const hann = 0.5 - 0.5 * Math.cos(a * i);
    return type === 'povey' ? hann ** 0.85 : hann;
  });
}

/** Frames torchaudio makes of `samples` samples with snip_edges (0 when shorter than one frame). */
export function kaldiFrameCount(samples: number, o: KaldiFbankOptions): number {
  const { windowSize, windowShift } = setupFor(o);
  return samples < windowSize ? 0 : 1 + Math.floor((samples - windowSize) / windowShift);
}

/**
 * The log mel energies of one clip (mono, at `samplingRate`): `frames` rows of `melBins`, frame
 * after frame. A clip shorter than one frame is refused, as torchaudio refuses it.
 */
export function kaldiFbank(
  audio: Float32Array,
  o: KaldiFbankOptions,
  field = 'input',
): { data: Float64Array; frames: number } {
  const s = setupFor(o);
  const frames = kaldiFrameCount(audio.length, o);
  if (frames === 0)
    throw new InputError(
      `${field}: ${audio.length} samples are shorter than one ${s.windowSize}-sample analysis frame ` +
        `(${o.frameLengthMs ?? 25} ms at ${o.samplingRate} Hz)`,
      { field },
    );
  const bins = s.paddedSize / 2 + 1;
  const data = new Float64Array(frames * o.melBins);
  const frame = new Float64Array(s.paddedSize);
  const raw = new Float64Array(s.windowSize);
  for (let t = 0; t < frames; t += 1) {
    const start = t * s.windowShift;
    let mean = 0;
    for (let i = 0; i < s.windowSize; i += 1) {
      const v = audio[start + i] as number;
      raw[i] = v;
      mean += v;
    }
    mean /= s.windowSize;
    for (let i = 0; i < s.windowSize; i += 1) raw[i] = (raw[i] as number) - mean;
    for (let i = 0; i < s.windowSize; i += 1) {
      const previous = raw[i === 0 ? 0 : i - 1] as number;
      frame[i] = ((raw[i] as number) - s.preemphasis * previous) * (s.window[i] as number);
    }
    frame.fill(0, s.windowSize);
    const { re, im } = s.fft.real(frame);
    for (let m = 0; m < o.melBins; m += 1) {
      const row = s.filters[m] as Float64Array;
      let energy = 0;
      for (let b = 0; b < bins; b += 1) {
        const weight = row[b] as number;
        if (weight !== 0) energy += weight * ((re[b] as number) ** 2 + (im[b] as number) ** 2);
      }
      data[t * o.melBins + m] = Math.log(Math.max(energy, EPSILON));
    }
  }
  return { data, frames };
}
