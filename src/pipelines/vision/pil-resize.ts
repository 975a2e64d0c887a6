// Pillow's Image.resize for 8-bit RGB, reimplemented so that preprocessing gives Python's pixels
// exactly: a separable convolution (horizontal pass, then vertical), the filter's support widened
// by the downscale factor (antialiasing), coefficients in 22-bit fixed point, and every pass
// rounded and clamped to uint8, as Pillow's Resample.c does. sharp/libvips resample differently.

/** Pillow's resampling filter numbers, as preprocessor_config.json's `resample` stores them. */
export const PIL_FILTERS = {
  0: 'nearest',
  1: 'lanczos',
  2: 'bilinear',
  3: 'bicubic',
  4: 'box',
  5: 'hamming',
} as const;

export type PilFilter = (typeof PIL_FILTERS)[keyof typeof PIL_FILTERS];

/** Interleaved RGB bytes, row by row. */
export interface RgbImage {
  data: Uint8Array;
  width: number;
  height: number;
}

interface Kernel {
  support: number;
  weight: (x: number) => number;
}

const KERNELS: Record<Exclude<PilFilter, 'nearest'>, Kernel> = {
  box: { support: 0.5, weight: (x) => (x > -0.5 && x <= 0.5 ? 1 : 0) },
  bilinear: { support: 1, weight: (x) => Math.max(0, 1 - Math.abs(x)) },
  hamming: {
    support: 1,
    weight: (x) => {
      const a = Math.abs(x);
      if (a === 0) return 1;
      if (a >= 1) return 0;
      const px = Math.PI * a;
      return (Math.sin(px) / px) * (0.54 + 0.46 * Math.cos(px));
    },
  },
  bicubic: {
    support: 2,
    weight: (x) => {
      // Keys' cubic with a = -0.5, as Pillow.
      const a = -0.5;
      const t = Math.abs(x);
      if (t < 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
      if (t < 2) return (((t - 5) * t + 8) * t - 4) * a;
      return 0;
    },
  },
  lanczos: {
    support: 3,
    weight: (x) => (x > -3 && x < 3 ? sinc(x) * sinc(x / 3) : 0),
  },
};

const PRECISION_BITS = 32 - 8 - 2;

export function pilResize(
  image: RgbImage,
  width: number,
  height: number,
  filter: PilFilter,
): RgbImage {
  if (image.width === width && image.height === height) return image;
  if (filter === 'nearest') return nearest(image, width, height);
  const kernel = KERNELS[filter];
  let current = image;
  // Horizontal pass first, as Pillow's ImagingResampleInner. (Pillow 13 sometimes runs the
  // vertical pass first for anisotropic resizes; see docs/pipelines.md, known gaps.)
  if (width !== image.width) current = horizontal(current, width, kernel);
  if (height !== image.height) current = vertical(current, height, kernel);
  return current;
}

interface Coefficients {
  /** First input index per output index. */
  start: Int32Array;
  /** Taps per output index. */
  count: Int32Array;
  /** Fixed-point weights, `taps` per output index. */
  weights: Int32Array;
  taps: number;
}

/** Pillow's precompute_coeffs + normalize_coeffs_8bpc. */
function coefficients(inSize: number, outSize: number, kernel: Kernel): Coefficients {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = kernel.support * filterScale;
  const taps = Math.ceil(support) * 2 + 1;
  const start = new Int32Array(outSize);
  const count = new Int32Array(outSize);
  const weights = new Int32Array(outSize * taps);
  const pre = new Float64Array(taps);
  for (let xx = 0; xx < outSize; xx += 1) {
    const center = (xx + 0.5) * scale;
    const ss = 1 / filterScale;
    // C casts truncate toward zero.
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let total = 0;
    for (let x = 0; x < xmax; x += 1) {
      const w = kernel.weight((x + xmin - center + 0.5) * ss);
      pre[x] = w;
      total += w;
    }
    for (let x = 0; x < xmax; x += 1) {
      const w = total === 0 ? (pre[x] as number) : (pre[x] as number) / total;
      const fixed = w * (1 << PRECISION_BITS);
      weights[xx * taps + x] = w < 0 ? Math.trunc(-0.5 + fixed) : Math.trunc(0.5 + fixed);
    }
    start[xx] = xmin;
    count[xx] = xmax;
  }
  return { start, count, weights, taps };
}

function clip8(value: number): number {
  // value is the fixed-point sum; an arithmetic shift, as Pillow's `ss >> PRECISION_BITS`.
  const shifted = Math.floor(value / (1 << PRECISION_BITS));
  return shifted < 0 ? 0 : shifted > 255 ? 255 : shifted;
}

function horizontal(image: RgbImage, width: number, kernel: Kernel): RgbImage {
  const c = coefficients(image.width, width, kernel);
  const out = new Uint8Array(width * image.height * 3);
  const half = 1 << (PRECISION_BITS - 1);
  for (let y = 0; y < image.height; y += 1) {
    const row = y * image.width * 3;
    for (let xx = 0; xx < width; xx += 1) {
      const xmin = c.start[xx] as number;
      const n = c.count[xx] as number;
      let r = half;
      let g = half;
      let b = half;
      for (let x = 0; x < n; x += 1) {
        const k = c.weights[xx * c.taps + x] as number;
        const p = row + (xmin + x) * 3;
        r += (image.data[p] as number) * k;
        g += (image.data[p + 1] as number) * k;
        b += (image.data[p + 2] as number) * k;
      }
      const o = (y * width + xx) * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  }
  return { data: out, width, height: image.height };
}

function vertical(image: RgbImage, height: number, kernel: Kernel): RgbImage {
  const c = coefficients(image.height, height, kernel);
  const out = new Uint8Array(image.width * height * 3);
  const half = 1 << (PRECISION_BITS - 1);
  for (let yy = 0; yy < height; yy += 1) {
    const ymin = c.start[yy] as number;
    const n = c.count[yy] as number;
    for (let x = 0; x < image.width; x += 1) {
      let r = half;
      let g = half;
      let b = half;
      for (let y = 0; y < n; y += 1) {
        const k = c.weights[yy * c.taps + y] as number;
        const p = ((ymin + y) * image.width + x) * 3;
        r += (image.data[p] as number) * k;
        g += (image.data[p + 1] as number) * k;
        b += (image.data[p + 2] as number) * k;
      }
      const o = (yy * image.width + x) * 3;
      out[o] = clip8(r);
      out[o + 1] = clip8(g);
      out[o + 2] = clip8(b);
    }
  }
  return { data: out, width: image.width, height };
}

/** Pillow's nearest neighbour: the source pixel under each output pixel's centre. */
function nearest(image: RgbImage, width: number, height: number): RgbImage {
  const out = new Uint8Array(width * height * 3);
  const sx = image.width / width;
  const sy = image.height / height;
  for (let y = 0; y < height; y += 1) {
    const iy = Math.min(Math.floor((y + 0.5) * sy), image.height - 1);
    for (let x = 0; x < width; x += 1) {
      const ix = Math.min(Math.floor((x + 0.5) * sx), image.width - 1);
      const s = (iy * image.width + ix) * 3;
      const o = (y * width + x) * 3;
      out[o] = image.data[s] as number;
      out[o + 1] = image.data[s + 1] as number;
      out[o + 2] = image.data[s + 2] as number;
    }
  }
  return { data: out, width, height };
}

function sinc(x: number): number {
  if (x === 0) return 1;
  const px = Math.PI * x;
  return Math.sin(px) / px;
}
