// torch.nn.functional.interpolate(mode="bicubic", align_corners=False) for one float channel, as
// the depth post-processing calls it: Keys' cubic with A = -0.75 (not Pillow's -0.5), source
// coordinates (dst + 0.5) * scale - 0.5 without clamping, and taps past an edge repeating the
// edge pixel. Computed in double precision; torch's float32 sums differ by ~1e-7 relative.

const A = -0.75;

export interface FloatImage {
  data: Float32Array;
  width: number;
  height: number;
}

export function torchBicubic(image: FloatImage, width: number, height: number): FloatImage {
  const xs = taps(image.width, width);
  const ys = taps(image.height, height);
  const out = new Float32Array(width * height);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      let sum = 0;
      for (let j = 0; j < 4; j += 1) {
        const row = (ys.index[y * 4 + j] as number) * image.width;
        let line = 0;
        for (let i = 0; i < 4; i += 1)
          line +=
            (xs.weight[x * 4 + i] as number) *
            (image.data[row + (xs.index[x * 4 + i] as number)] as number);
        sum += (ys.weight[y * 4 + j] as number) * line;
      }
      out[y * width + x] = sum;
    }
  }
  return { data: out, width, height };
}

/** Per output position, the four source indices (clamped) and their weights. */
function taps(inSize: number, outSize: number): { index: Int32Array; weight: Float64Array } {
  // torch computes the scale in float32 when only the output size is given.
  const scale = Math.fround(inSize / outSize);
  const index = new Int32Array(outSize * 4);
  const weight = new Float64Array(outSize * 4);
  for (let o = 0; o < outSize; o += 1) {
    const real = scale * (o + 0.5) - 0.5;
    const base = Math.min(Math.floor(real), inSize - 1);
    const t = Math.min(Math.max(real - base, 0), 1);
    const w = [far(t + 1), near(t), near(1 - t), far(2 - t)];
    for (let k = 0; k < 4; k += 1) {
      index[o * 4 + k] = Math.max(Math.min(base - 1 + k, inSize - 1), 0);
      weight[o * 4 + k] = w[k] as number;
    }
  }
  return { index, weight };
}

/** The cubic for |x| <= 1. */
function near(x: number): number {
  return ((A + 2) * x - (A + 3)) * x * x + 1;
}

/** The cubic for 1 < |x| < 2. */
function far(x: number): number {
  return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
}
