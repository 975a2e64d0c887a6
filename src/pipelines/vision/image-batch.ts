// Images in, model inputs out, one ONNX batch per preprocessed size. Python's image pipelines run
// one image per forward pass; stacking only same-size images keeps each image's result what it
// would be alone (no padding, no pixel_mask zeros), while same-size images still share a run.
import { Tensor } from '../../runtime/tensor.ts';
import { decodeImage, type ImageInput } from './image-decode.ts';
import { preprocessImage, type ImagePreprocessor } from './image-preprocess.ts';
import type { RgbImage } from './pil-resize.ts';

export interface PreparedImage {
  /** The decoded image, before resizing (post-processing maps back to its size). */
  original: RgbImage;
  /** Channels-first float32 pixels, [3, height, width]. */
  data: Float32Array;
  height: number;
  width: number;
}

/** Decodes (`inputs[i]` names a failure) and preprocesses every input. */
export async function prepareImages(
  inputs: readonly ImageInput[],
  preprocessor: ImagePreprocessor,
): Promise<PreparedImage[]> {
  const images = await Promise.all(inputs.map((input, i) => decodeImage(input, `inputs[${i}]`)));
  return images.map((original) => ({ original, ...preprocessImage(original, preprocessor) }));
}

/** Indices of the images, grouped by preprocessed size, in first-seen order. */
export function sameSizeGroups(images: readonly PreparedImage[]): number[][] {
  const groups = new Map<string, number[]>();
  images.forEach((image, i) => {
    const key = `${image.height}x${image.width}`;
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [i]);
    else group.push(i);
  });
  return [...groups.values()];
}

/** `pixel_values` (and an all-ones `pixel_mask` when the model takes one) for a same-size group. */
export function imageFeeds(
  images: readonly PreparedImage[],
  inputNames: readonly string[],
): Record<string, Tensor> {
  const first = images[0];
  if (first === undefined) return {};
  const { height, width } = first;
  const size = first.data.length;
  const batch = new Float32Array(size * images.length);
  images.forEach((image, i) => batch.set(image.data, i * size));
  const pixelName = inputNames.includes('pixel_values')
    ? 'pixel_values'
    : (inputNames[0] ?? 'pixel_values');
  const feeds: Record<string, Tensor> = {
    [pixelName]: new Tensor('float32', batch, [images.length, 3, height, width]),
  };
  if (inputNames.includes('pixel_mask'))
    feeds['pixel_mask'] = new Tensor(
      'int64',
      new BigInt64Array(images.length * height * width).fill(1n),
      [images.length, height, width],
    );
  return feeds;
}

/** Runs `step` once per same-size group and returns the results in input order. */
export async function bySize<T>(
  images: readonly PreparedImage[],
  step: (group: readonly PreparedImage[]) => Promise<T[]>,
): Promise<T[]> {
  const results = new Array<T>(images.length);
  for (const indices of sameSizeGroups(images)) {
    const outputs = await step(indices.map((i) => images[i] as PreparedImage));
    indices.forEach((index, k) => {
      results[index] = outputs[k] as T;
    });
  }
  return results;
}
