// torch.nn.functional.interpolate(mode="bilinear", align_corners=False), the step every
// segmentation post-processor uses to bring a low-resolution map back to the image's size. The
// source coordinates and weights are rounded to float32 where PyTorch's CPU kernel rounds them, so
// a class decision only differs from Python's where two values tie within a float32 step.

/** For each output index along one axis: the two source indices and their weights. */
export interface AxisTaps {
  lower: Int32Array;
  upper: Int32Array;
  lowerWeight: Float32Array;
  upperWeight: Float32Array;
}

const f = Math.fround;

/** PyTorch's area_pixel_compute_source_index + guard_index_and_lambda, per output index. */
export function axisTaps(inSize: number, outSize: number): AxisTaps {
  const taps: AxisTaps = {
    lower: new Int32Array(outSize),
    upper: new Int32Array(outSize),
    lowerWeight: new Float32Array(outSize),
    upperWeight: new Float32Array(outSize),
  };
  const scale = f(inSize / outSize);
  for (let o = 0; o < outSize; o += 1) {
    const source = Math.max(0, f(f(scale * f(o + 0.5)) - 0.5));
    const lower = Math.min(Math.floor(source), inSize - 1);
    const upperWeight = Math.min(Math.max(f(source - lower), 0), 1);
    taps.lower[o] = lower;
    taps.upper[o] = lower < inSize - 1 ? lower + 1 : lower;
    taps.upperWeight[o] = upperWeight;
    taps.lowerWeight[o] = f(1 - upperWeight);
  }
  return taps;
}

/** A [height, width] float map sampled at one output pixel, as PyTorch's kernel sums it. */
export function sampleAt(
  plane: Float32Array,
  inWidth: number,
  rows: AxisTaps,
  cols: AxisTaps,
  y: number,
  x: number,
): number {
  const r0 = (rows.lower[y] as number) * inWidth;
  const r1 = (rows.upper[y] as number) * inWidth;
  const c0 = cols.lower[x] as number;
  const c1 = cols.upper[x] as number;
  const w0 = cols.lowerWeight[x] as number;
  const w1 = cols.upperWeight[x] as number;
  const top = f(f((plane[r0 + c0] as number) * w0) + f((plane[r0 + c1] as number) * w1));
  const bottom = f(f((plane[r1 + c0] as number) * w0) + f((plane[r1 + c1] as number) * w1));
  return f(f(top * (rows.lowerWeight[y] as number)) + f(bottom * (rows.upperWeight[y] as number)));
}

/** One [inHeight, inWidth] plane resized to [outHeight, outWidth]. */
export function upsamplePlane(
  plane: Float32Array,
  inHeight: number,
  inWidth: number,
  outHeight: number,
  outWidth: number,
): Float32Array {
  const rows = axisTaps(inHeight, outHeight);
  const cols = axisTaps(inWidth, outWidth);
  const out = new Float32Array(outHeight * outWidth);
  for (let y = 0; y < outHeight; y += 1)
    for (let x = 0; x < outWidth; x += 1)
      out[y * outWidth + x] = sampleAt(plane, inWidth, rows, cols, y, x);
  return out;
}
