// Images in (a file path, encoded bytes, or raw RGB pixels) -> 8-bit RGB pixels, as Python's
// load_image gives them: EXIF orientation applied, then PIL's convert("RGB"), which drops an alpha
// channel without compositing and repeats a grey channel three times.
import type { OutputInfo } from 'sharp';
import { InputError } from '../../errors.ts';
import { loadSharp } from './load-sharp.ts';
import type { RgbImage } from './pil-resize.ts';

/** A file path, the bytes of an encoded image (PNG, JPEG, WebP, ...), or raw RGB pixels. */
export type ImageInput = string | Uint8Array | RgbImage;

/**
 * Decoding stops past this many pixels (sharp's own default, 16383 x 16383, would take ~800 MB of
 * RGB): 25 megapixels is more than any image model here resizes from. Stream routes check
 * limits.maxImagePixels on the header before an image reaches this point.
 */
export const MAX_DECODED_PIXELS = 25_000_000;

export async function decodeImage(input: ImageInput, field: string): Promise<RgbImage> {
  if (isRawImage(input)) return checkRaw(input, field);
  if (typeof input !== 'string' && !(input instanceof Uint8Array)) {
    throw new InputError(
      `${field} must be an image path, encoded image bytes, or {data, width, height} RGB pixels`,
      { field },
    );
  }
  let decoded: { data: Buffer; info: OutputInfo };
  const sharp = await loadSharp();
  try {
    decoded = await sharp(input, { failOn: 'error', limitInputPixels: MAX_DECODED_PIXELS })
      .rotate()
      .raw()
      .toBuffer({ resolveWithObject: true });
  } catch (cause) {
    const what = typeof input === 'string' ? input : `${input.length} bytes`;
    throw new InputError(`${field}: cannot read an image from ${what}: ${String(cause)}`, {
      cause,
      field,
    });
  }
  const { data, info } = decoded;
  // 16-bit images come back with two bytes per sample.
  if (data.length !== info.width * info.height * info.channels) {
    throw new InputError(`${field}: only 8-bit images are supported`, {
      field,
    });
  }
  return toRgb(data, info.width, info.height, info.channels);
}

function toRgb(data: Uint8Array, width: number, height: number, channels: number): RgbImage {
  if (channels === 3) return { data: new Uint8Array(data), width, height };
  const out = new Uint8Array(width * height * 3);
  for (let i = 0; i < width * height; i += 1) {
    const s = i * channels;
    // 1 or 2 channels are grey (+ alpha); 4 are RGBA. Alpha is dropped, as PIL's convert does.
    const grey = channels < 3;
    out[i * 3] = data[s] as number;
    out[i * 3 + 1] = data[grey ? s : s + 1] as number;
    out[i * 3 + 2] = data[grey ? s : s + 2] as number;
  }
  return { data: out, width, height };
}

function isRawImage(input: unknown): input is RgbImage {
  return (
    input !== null &&
    typeof input === 'object' &&
    !(input instanceof Uint8Array) &&
    'data' in input &&
    'width' in input &&
    'height' in input
  );
}

function checkRaw(image: RgbImage, field: string): RgbImage {
  const { data, width, height } = image;
  if (
    !(data instanceof Uint8Array) ||
    !Number.isInteger(width) ||
    !Number.isInteger(height) ||
    width <= 0 ||
    height <= 0 ||
    data.length !== width * height * 3
  ) {
    throw new InputError(
      `${field}: raw pixels must be {data: Uint8Array of width*height*3 RGB bytes, width, height}`,
      { field },
    );
  }
  return image;
}
