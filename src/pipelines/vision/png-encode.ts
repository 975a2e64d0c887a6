// Images a pipeline returns (masks, cut-outs) as PNG bytes: lossless, so a consumer decodes the
// exact pixels the pipeline computed.
import { loadSharp } from './load-sharp.ts';

/** 8-bit pixels, row by row, interleaved: 1 channel (grey), 3 (RGB) or 4 (RGBA). */
export async function encodePng(
  pixels: Uint8Array,
  width: number,
  height: number,
  channels: 1 | 3 | 4,
): Promise<Uint8Array> {
  // Without the colour space sharp widens one channel to RGB.
  const sharp = await loadSharp();
  const png = await sharp(pixels, { raw: { width, height, channels } })
    .toColourspace(channels === 1 ? 'b-w' : 'srgb')
    .png({ compressionLevel: 6 })
    .toBuffer();
  // A copy in memory of its own: sharp's buffer is external memory (or a slice of Node's buffer
  // pool), which an inference thread cannot transfer to the main thread.
  return new Uint8Array(png);
}
