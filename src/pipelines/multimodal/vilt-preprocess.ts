// ViLT's image processor (ViltImageProcessor, PIL backend): the short side scaled to
// size.shortest_edge with the long side capped at 1333/800 of it, both rounded half up and floored
// to a multiple of size_divisor, then Pillow's resize, rescale and normalize as for every other
// image model. Its padding (do_pad) only ever pads a batch to its largest image; the pipeline runs
// each size apart (image-batch.ts), so every image keeps an all-ones pixel_mask, as alone in Python.
import { ModelFolderError } from '../../errors.ts';
import { compilePreprocessor, type ImagePreprocessor } from '../vision/image-preprocess.ts';

export interface ViltPreprocessor {
  /** Resize, rescale and normalize; `resize` is set per image from the rule below. */
  base: ImagePreprocessor;
  shorter: number;
  longer: number;
  divisor: number;
}

// ViLT's constants: the longer edge may be at most 1333/800 of the shorter one.
const MAX_LONGER_EDGE = 1333;
const MAX_SHORTER_EDGE = 800;

export function compileViltPreprocessor(
  raw: Record<string, unknown> | undefined,
  folder: string,
): ViltPreprocessor {
  const fail = (field: string, expected: string): never => {
    throw new ModelFolderError(
      `${folder}/preprocessor_config.json: ${field} must be ${expected}, got ${JSON.stringify(raw?.[field])}`,
      { field },
    );
  };
  if (raw === undefined)
    throw new ModelFolderError(`${folder} has no preprocessor_config.json; ViLT needs it`, {
      field: 'preprocessor_config.json',
    });
  if (raw['do_resize'] === false) fail('do_resize', 'true (ViLT sizes every image by its rule)');
  const size = raw['size'] ?? { shortest_edge: 384 };
  const shorter = (size as { shortest_edge?: unknown } | null)?.shortest_edge;
  if (typeof shorter !== 'number' || !Number.isInteger(shorter) || shorter < 1)
    fail('size', '{shortest_edge: a positive integer}');
  const divisor = raw['size_divisor'] ?? 32;
  if (typeof divisor !== 'number' || !Number.isInteger(divisor) || divisor < 1)
    fail('size_divisor', 'a positive integer');
  // The generic compiler reads the filter, rescale and normalize keys; the size is ViLT's own.
  const rest = { ...raw };
  delete rest['size_divisor'];
  delete rest['do_pad'];
  const base = compilePreprocessor(
    { ...rest, size: { height: 1, width: 1 }, do_center_crop: false },
    folder,
  );
  return {
    base,
    shorter: shorter as number,
    longer: Math.trunc((MAX_LONGER_EDGE / MAX_SHORTER_EDGE) * (shorter as number)),
    divisor: divisor as number,
  };
}

/** ViLT's get_resize_output_image_size, in the same float steps as Python. */
export function viltSize(
  height: number,
  width: number,
  p: Pick<ViltPreprocessor, 'shorter' | 'longer' | 'divisor'>,
): { height: number; width: number } {
  const scale = p.shorter / Math.min(height, width);
  let newHeight: number;
  let newWidth: number;
  if (height < width) {
    newHeight = p.shorter;
    newWidth = scale * width;
  } else {
    newHeight = scale * height;
    newWidth = p.shorter;
  }
  if (Math.max(newHeight, newWidth) > p.longer) {
    const shrink = p.longer / Math.max(newHeight, newWidth);
    newHeight = shrink * newHeight;
    newWidth = shrink * newWidth;
  }
  const h = Math.trunc(newHeight + 0.5);
  const w = Math.trunc(newWidth + 0.5);
  return {
    height: Math.floor(h / p.divisor) * p.divisor,
    width: Math.floor(w / p.divisor) * p.divisor,
  };
}

/** The generic preprocessor with this image's ViLT size as an exact resize. */
export function viltPreprocessorFor(
  p: ViltPreprocessor,
  height: number,
  width: number,
): ImagePreprocessor {
  return { ...p.base, resize: { kind: 'exact', ...viltSize(height, width, p) }, fit: undefined };
}
