// The size an image processor resizes an image to, from preprocessor_config.json's `size` and the
// keys that adjust it, computed as Python computes it (integer truncation and `round`, which
// rounds halves to even), so that the resized pixels, and so the model input, are Python's.

/** A `size` as preprocessor_config.json spells it. */
export type Size =
  | { kind: 'exact'; height: number; width: number }
  | { kind: 'shortestEdge'; shortestEdge: number }
  | { kind: 'shortestLongest'; shortestEdge: number; longestEdge: number; yolos?: boolean }
  /** GLPN: each side rounded down to a multiple of `divisor` (size_divisor). */
  | { kind: 'divisor'; divisor: number };

/**
 * DPT's resize (Depth Anything's processor): the exact size is a target that `keep_aspect_ratio`
 * bends to scale both sides alike, and each side lands on a multiple of `ensure_multiple_of`.
 */
export interface AspectFit {
  keepAspectRatio: boolean;
  multiple: number;
}

export function sizeOf(value: unknown, fail: () => never): Size {
  if (typeof value === 'number') return { kind: 'exact', height: value, width: value };
  if (value === null || typeof value !== 'object') return fail();
  const v = value as Record<string, unknown>;
  const positive = (x: unknown): x is number => typeof x === 'number' && x > 0;
  if (positive(v['height']) && positive(v['width']))
    return { kind: 'exact', height: v['height'], width: v['width'] };
  if (positive(v['shortest_edge']) && positive(v['longest_edge']))
    return {
      kind: 'shortestLongest',
      shortestEdge: v['shortest_edge'],
      longestEdge: v['longest_edge'],
    };
  if (positive(v['shortest_edge']) && v['longest_edge'] == null)
    return { kind: 'shortestEdge', shortestEdge: v['shortest_edge'] };
  return fail();
}

export function targetSize(
  height: number,
  width: number,
  size: Size,
  fit?: AspectFit,
): { height: number; width: number } {
  if (size.kind === 'exact')
    return fit === undefined ? { height: size.height, width: size.width } : fitted();
  if (size.kind === 'divisor')
    return {
      height: height - (height % size.divisor),
      width: width - (width % size.divisor),
    };
  if (size.kind === 'shortestEdge') {
    // get_resize_output_image_size(default_to_square=False): the short side becomes
    // shortest_edge, the long side keeps the aspect ratio (truncated).
    const short = Math.min(height, width);
    const long = Math.max(height, width);
    const newShort = size.shortestEdge;
    const newLong = Math.trunc((newShort * long) / short);
    return height <= width
      ? { height: newShort, width: newLong }
      : { height: newLong, width: newShort };
  }
  return withAspectRatio(height, width, size.shortestEdge, size.longestEdge, size.yolos === true);

  function fitted(): { height: number; width: number } {
    const { keepAspectRatio, multiple } = fit as AspectFit;
    let scaleHeight = (size as { height: number }).height / height;
    let scaleWidth = (size as { width: number }).width / width;
    // Scale as little as possible: the side that needs the smaller change sets both.
    if (keepAspectRatio) {
      if (Math.abs(1 - scaleWidth) < Math.abs(1 - scaleHeight)) scaleHeight = scaleWidth;
      else scaleWidth = scaleHeight;
    }
    return {
      height: toMultiple(scaleHeight * height, multiple),
      width: toMultiple(scaleWidth * width, multiple),
    };
  }
}

/**
 * get_size_with_aspect_ratio: the short side to shortest_edge unless the long side would pass
 * longest_edge. YOLOS's variant tests a portrait image first and then rounds both sides down to a
 * multiple of 16 (its patch size).
 */
function withAspectRatio(
  height: number,
  width: number,
  shortestEdge: number,
  longestEdge: number,
  yolos: boolean,
): { height: number; width: number } {
  let size = shortestEdge;
  let raw: number | undefined;
  const minOriginal = Math.min(height, width);
  const maxOriginal = Math.max(height, width);
  if ((maxOriginal / minOriginal) * size > longestEdge) {
    raw = (longestEdge * minOriginal) / maxOriginal;
    size = roundHalfEven(raw);
  }
  const keeps = (height <= width && height === size) || (width <= height && width === size);
  let out: { height: number; width: number };
  if (keeps && !(yolos && width < height)) out = { height, width };
  else if (width < height)
    out = {
      width: size,
      height: Math.trunc(raw !== undefined ? (raw * height) / width : (size * height) / width),
    };
  else
    out = {
      height: size,
      width: Math.trunc(raw !== undefined ? (raw * width) / height : (size * width) / height),
    };
  if (!yolos) return out;
  return { height: out.height - (out.height % 16), width: out.width - (out.width % 16) };
}

/** DPT's constrain_to_multiple_of without bounds: the nearest multiple, at least 0. */
function toMultiple(value: number, multiple: number): number {
  const x = roundHalfEven(value / multiple) * multiple;
  return x < 0 ? Math.ceil(value / multiple) * multiple : x;
}

/** Python 3's round(): halves go to the even neighbour. */
export function roundHalfEven(value: number): number {
  const floor = Math.floor(value);
  const fraction = value - floor;
  if (fraction !== 0.5) return Math.round(value);
  return floor % 2 === 0 ? floor : floor + 1;
}
