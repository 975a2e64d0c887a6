// Image outputs (masks, cut-outs) compared by their pixels: Python's goldens store the raw 8-bit
// pixels of each PIL image, our pipelines return PNG bytes, and two PNG encoders need not agree
// on bytes while the pixels must.
import sharp from 'sharp';

export interface GoldenImage {
  mode: 'L' | 'RGB' | 'RGBA';
  /** [width, height], as PIL reports it. */
  size: [number, number];
  pixels_base64: string;
}

export interface Pixels {
  data: Uint8Array;
  width: number;
  height: number;
  channels: number;
}

export async function pngPixels(png: Uint8Array): Promise<Pixels> {
  // sharp widens a grey PNG to RGB on the way out unless told to keep it grey.
  const { channels } = await sharp(png).metadata();
  const decoder = channels === 1 ? sharp(png).toColourspace('b-w') : sharp(png);
  const { data, info } = await decoder.raw().toBuffer({ resolveWithObject: true });
  return {
    data: new Uint8Array(data),
    width: info.width,
    height: info.height,
    channels: info.channels,
  };
}

export function goldenPixels(golden: GoldenImage): Pixels {
  const channels = { L: 1, RGB: 3, RGBA: 4 }[golden.mode];
  return {
    data: new Uint8Array(Buffer.from(golden.pixels_base64, 'base64')),
    width: golden.size[0],
    height: golden.size[1],
    channels,
  };
}

/** Pixel positions (not samples) where the images differ; shapes must match. */
export function differingPixels(actual: Pixels, expected: Pixels): number[] {
  if (
    actual.width !== expected.width ||
    actual.height !== expected.height ||
    actual.channels !== expected.channels
  )
    throw new Error(
      `image is ${actual.width}x${actual.height}x${actual.channels}, expected ${expected.width}x${expected.height}x${expected.channels}`,
    );
  const out: number[] = [];
  const n = actual.width * actual.height;
  for (let p = 0; p < n; p += 1) {
    for (let c = 0; c < actual.channels; c += 1) {
      const i = p * actual.channels + c;
      if (actual.data[i] !== expected.data[i]) {
        out.push(p);
        break;
      }
    }
  }
  return out;
}
