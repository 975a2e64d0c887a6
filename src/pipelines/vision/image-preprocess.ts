// preprocessor_config.json -> the pixel_values Python's (PIL-backend) image processor makes:
// resize with Pillow's filter, optional centre crop, rescale, normalize, channels first, float32.
// Each arithmetic step rounds to float32 where numpy does, so the tensors are bit-identical.
// Padding is never needed: pipelines run images of different sizes in separate batches
// (image-batch.ts), as Python's pipelines run one image at a time.
import { InputError, ModelFolderError } from '../../errors.ts';
import { PIL_FILTERS, pilResize, type PilFilter, type RgbImage } from './pil-resize.ts';
import { sizeOf, targetSize, type AspectFit, type Size } from './resize-size.ts';

export interface ImagePreprocessor {
  resize: Size | undefined;
  /** DPT's keep_aspect_ratio / ensure_multiple_of, when the config sets them. */
  fit: AspectFit | undefined;
  filter: PilFilter;
  crop: { height: number; width: number } | undefined;
  rescaleFactor: number | undefined;
  normalize: { mean: [number, number, number]; std: [number, number, number] } | undefined;
}

// Python's ImageNet-standard defaults, used when a config leaves mean/std out.
const DEFAULT_MEAN = 0.5;
const DEFAULT_STD = 0.5;

export function compilePreprocessor(
  raw: Record<string, unknown> | undefined,
  folder: string,
): ImagePreprocessor {
  if (raw === undefined)
    throw new ModelFolderError(
      `${folder} has no preprocessor_config.json; image pipelines need it`,
      {
        field: 'preprocessor_config.json',
      },
    );
  const fail = (field: string, expected: string): never => {
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: ${field} must be ${expected}, got ${JSON.stringify(raw[field])}`,
      { field },
    );
  };
  const resample = raw['resample'] ?? 2;
  const filter = PIL_FILTERS[resample as keyof typeof PIL_FILTERS];
  if (filter === undefined) fail('resample', 'a Pillow filter number 0-5');
  // Padding to a fixed size or a multiple changes what the model sees; not implemented.
  if (raw['pad_size'] != null) fail('pad_size', 'unset (fixed-size padding is not supported)');
  if (raw['do_pad'] === true && raw['size_divisor'] != null)
    fail('size_divisor', 'unset when do_pad is true (padding to a multiple is not supported)');
  const multiple = raw['ensure_multiple_of'] ?? 1;
  if (typeof multiple !== 'number' || !Number.isInteger(multiple) || multiple < 1)
    fail('ensure_multiple_of', 'a positive integer');
  const fit =
    raw['keep_aspect_ratio'] === true || multiple !== 1
      ? { keepAspectRatio: raw['keep_aspect_ratio'] === true, multiple: multiple as number }
      : undefined;
  // A few processor classes resize by their own rule, and GLPN's does not normalise by default.
  const type = typeof raw['image_processor_type'] === 'string' ? raw['image_processor_type'] : '';
  const glpn = type.startsWith('GLPN');
  let resize: Size | undefined;
  if (raw['do_resize'] === false) resize = undefined;
  else if (glpn) {
    const divisor = raw['size_divisor'] ?? 32;
    if (typeof divisor !== 'number' || !Number.isInteger(divisor) || divisor < 1)
      fail('size_divisor', 'a positive integer');
    resize = { kind: 'divisor', divisor: divisor as number };
  } else resize = sizeOf(raw['size'], () => fail('size', 'a size'));
  if (resize?.kind === 'shortestLongest' && type.startsWith('Yolos'))
    resize = { ...resize, yolos: true };
  if (fit !== undefined && resize !== undefined && resize.kind !== 'exact')
    fail('size', '{height, width} with keep_aspect_ratio or ensure_multiple_of');
  return {
    resize,
    fit,
    filter: filter,
    crop:
      raw['do_center_crop'] === true
        ? cropOf(raw['crop_size'], () => fail('crop_size', '{height, width}'))
        : undefined,
    rescaleFactor:
      raw['do_rescale'] === false
        ? undefined
        : typeof raw['rescale_factor'] === 'number'
          ? raw['rescale_factor']
          : 1 / 255,
    normalize:
      (raw['do_normalize'] ?? !glpn) === false
        ? undefined
        : {
            mean: triple(raw['image_mean'], DEFAULT_MEAN, () => fail('image_mean', 'numbers')),
            std: triple(raw['image_std'], DEFAULT_STD, () => fail('image_std', 'numbers')),
          },
  };
}

/** The model's input for one image: [3, height, width] float32, channels first. */
export function preprocessImage(
  image: RgbImage,
  p: ImagePreprocessor,
): {
  data: Float32Array;
  height: number;
  width: number;
} {
  let current = image;
  if (p.resize !== undefined) {
    const { height, width } = targetSize(current.height, current.width, p.resize, p.fit);
    if (height < 1 || width < 1)
      throw new InputError(
        `a ${current.width}x${current.height} image resizes to nothing (${width}x${height})`,
        { field: 'image' },
      );
    current = pilResize(current, width, height, p.filter);
  }
  if (p.crop !== undefined) current = centerCrop(current, p.crop.height, p.crop.width);
  const { width, height, data } = current;
  const plane = width * height;
  const out = new Float32Array(plane * 3);
  const f = Math.fround;
  for (let c = 0; c < 3; c += 1) {
    const mean = f(p.normalize?.mean[c] ?? 0);
    const std = f(p.normalize?.std[c] ?? 1);
    for (let i = 0; i < plane; i += 1) {
      const byte = data[i * 3 + c] as number;
      // numpy: uint8 -> float64 * scale -> float32, then (x - mean) / std in float32.
      let value = p.rescaleFactor === undefined ? byte : f(byte * p.rescaleFactor);
      if (p.normalize !== undefined) value = f(f(value - mean) / std);
      out[c * plane + i] = value;
    }
  }
  return { data: out, height, width };
}

/** Python's center_crop: the middle region, zero-padded where the image is smaller. */
function centerCrop(image: RgbImage, height: number, width: number): RgbImage {
  const top = Math.floor((image.height - height) / 2);
  const left = Math.floor((image.width - width) / 2);
  // Where the crop is larger, numpy pads the image into a zero canvas first (centred, ceil).
  const padTop = Math.max(0, Math.ceil((height - image.height) / 2));
  const padLeft = Math.max(0, Math.ceil((width - image.width) / 2));
  const rowOffset = Math.max(0, top + padTop) - padTop;
  const colOffset = Math.max(0, left + padLeft) - padLeft;
  const out = new Uint8Array(width * height * 3);
  for (let y = 0; y < height; y += 1) {
    const sy = y + rowOffset;
    for (let x = 0; x < width; x += 1) {
      const sx = x + colOffset;
      if (sy < 0 || sy >= image.height || sx < 0 || sx >= image.width) continue;
      const s = (sy * image.width + sx) * 3;
      const o = (y * width + x) * 3;
      out[o] = image.data[s] as number;
      out[o + 1] = image.data[s + 1] as number;
      out[o + 2] = image.data[s + 2] as number;
    }
  }
  return { data: out, width, height };
}

function cropOf(value: unknown, fail: () => never): { height: number; width: number } {
  if (typeof value === 'number') return { height: value, width: value };
  const size = sizeOf(value, fail);
  return size.kind === 'exact' ? size : fail();
}

function triple(value: unknown, fallback: number, fail: () => never): [number, number, number] {
  if (value === undefined || value === null) return [fallback, fallback, fallback];
  if (typeof value === 'number') return [value, value, value];
  if (Array.isArray(value) && value.length === 3 && value.every((v) => typeof v === 'number'))
    return [value[0], value[1], value[2]] as [number, number, number];
  return fail();
}
