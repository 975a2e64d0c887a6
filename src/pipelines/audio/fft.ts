// A mixed-radix complex FFT for the frame sizes feature extractors use (Whisper's 400 = 2^4 * 5^2,
// 512, 1024): recursive decimation in time over the smallest prime factor, so any size works and
// composite sizes cost n * (sum of factors) instead of the n^2 of a plain DFT.

export class Fft {
  readonly size: number;
  private readonly cos: Float64Array;
  private readonly sin: Float64Array;

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`FFT size ${size}`);
    this.size = size;
    this.cos = new Float64Array(size);
    this.sin = new Float64Array(size);
    for (let i = 0; i < size; i += 1) {
      this.cos[i] = Math.cos((2 * Math.PI * i) / size);
      this.sin[i] = -Math.sin((2 * Math.PI * i) / size);
    }
  }

  /** The transform of a real frame: `re` and `im` of every bin, 0 .. size - 1. */
  real(frame: Float64Array): { re: Float64Array; im: Float64Array } {
    return this.transform(frame, new Float64Array(this.size), 0, 1, this.size);
  }

  private transform(
    re: Float64Array,
    im: Float64Array,
    offset: number,
    stride: number,
    n: number,
  ): { re: Float64Array; im: Float64Array } {
    const outRe = new Float64Array(n);
    const outIm = new Float64Array(n);
    if (n === 1) {
      outRe[0] = re[offset] as number;
      outIm[0] = im[offset] as number;
      return { re: outRe, im: outIm };
    }
    const p = smallestFactor(n);
    const m = n / p;
    const parts = [];
    for (let r = 0; r < p; r += 1)
      parts.push(this.transform(re, im, offset + r * stride, stride * p, m));
    // The twiddle W_n^e is W_size^(e * size / n).
    const step = this.size / n;
    for (let q = 0; q < p; q += 1) {
      for (let k = 0; k < m; k += 1) {
        const index = k + m * q;
        let sumRe = 0;
        let sumIm = 0;
        for (let r = 0; r < p; r += 1) {
          const part = parts[r] as { re: Float64Array; im: Float64Array };
          const e = ((r * index) % n) * step;
          const c = this.cos[e] as number;
          const s = this.sin[e] as number;
          const a = part.re[k] as number;
          const b = part.im[k] as number;
          sumRe += a * c - b * s;
          sumIm += a * s + b * c;
        }
        outRe[index] = sumRe;
        outIm[index] = sumIm;
      }
    }
    return { re: outRe, im: outIm };
  }
}

function smallestFactor(n: number): number {
  if (n % 2 === 0) return 2;
  for (let f = 3; f * f <= n; f += 2) if (n % f === 0) return f;
  return n;
}
