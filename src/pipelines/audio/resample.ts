// Resampling as transformers' audio pipelines do it when a clip's rate is not the model's:
// torchaudio.functional.resample with its defaults (windowed-sinc interpolation, Hann window,
// lowpass_filter_width 6, rolloff 0.99). The rates are reduced by their gcd; output sample j of each
// group of `to` uses its own filter over `from`-strided input, zero-padded at both ends, and the
// output is cut to ceil(length * to / from). Filters and sums run in float64 (torchaudio: float32
// filters for float32 audio): the goldens agree within 1e-5.

const LOWPASS_FILTER_WIDTH = 6;
const ROLLOFF = 0.99;

function gcd(a: number, b: number): number {
  return b === 0 ? a : gcd(b, a % b);
}

interface Kernel {
  /** `to` filters of `2 * width + from` taps each, row after row. */
  taps: Float64Array;
  width: number;
  from: number;
  to: number;
}

const kernels = new Map<string, Kernel>();

function kernelFor(fromRate: number, toRate: number): Kernel {
  const key = `${fromRate}:${toRate}`;
  const cached = kernels.get(key);
  if (cached !== undefined) return cached;
  const g = gcd(fromRate, toRate);
  const from = fromRate / g;
  const to = toRate / g;
  const baseFreq = Math.min(from, to) * ROLLOFF;
  const width = Math.ceil((LOWPASS_FILTER_WIDTH * from) / baseFreq);
  const length = 2 * width + from;
  const taps = new Float64Array(to * length);
  const scale = baseFreq / from;
  for (let j = 0; j < to; j += 1) {
    for (let k = 0; k < length; k += 1) {
      let t = (-j / to + (k - width) / from) * baseFreq;
      t = Math.max(-LOWPASS_FILTER_WIDTH, Math.min(LOWPASS_FILTER_WIDTH, t));
      const window = Math.cos((t * Math.PI) / LOWPASS_FILTER_WIDTH / 2) ** 2;
      const x = t * Math.PI;
      taps[j * length + k] = (x === 0 ? 1 : Math.sin(x) / x) * window * scale;
    }
  }
  const kernel = { taps, width, from, to };
  // A worker sees a handful of rates; the cache stays small.
  if (kernels.size < 64) kernels.set(key, kernel);
  return kernel;
}

/** The clip at `toRate`; the same array when the rates are equal (as Python skips the call). */
export function resample(audio: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (fromRate === toRate) return audio;
  const { taps, width, from, to } = kernelFor(fromRate, toRate);
  const length = 2 * width + from;
  const n = audio.length;
  const outLength = Math.ceil((to * n) / from);
  const out = new Float32Array(outLength);
  for (let index = 0; index < outLength; index += 1) {
    const block = Math.floor(index / to);
    const j = index - block * to;
    // Input position of tap 0 in the zero-padded signal, back in unpadded coordinates.
    const start = block * from - width;
    const row = j * length;
    let sum = 0;
    const kFrom = Math.max(0, -start);
    const kTo = Math.min(length, n - start);
    for (let k = kFrom; k < kTo; k += 1)
      sum += (taps[row + k] as number) * (audio[start + k] as number);
    out[index] = sum;
  }
  return out;
}
