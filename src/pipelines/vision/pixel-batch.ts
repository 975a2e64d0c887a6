// Preprocessed images -> the pixel_values tensors to run. Images of one size share a tensor;
// only processors that keep each image's own size (no resize, no crop) make more than one group.
import { Tensor } from '../../runtime/tensor.ts';

export interface PixelValues {
  data: Float32Array;
  height: number;
  width: number;
}

export interface PixelGroup {
  /** Positions of the group's images in the batch, in order. */
  indices: number[];
  tensor: Tensor;
}

export function pixelGroups(pixels: readonly PixelValues[]): PixelGroup[] {
  const bySize = new Map<string, number[]>();
  pixels.forEach((p, i) => {
    const key = `${p.height}x${p.width}`;
    const group = bySize.get(key);
    if (group === undefined) bySize.set(key, [i]);
    else group.push(i);
  });
  return [...bySize.values()].map((indices) => {
    const first = pixels[indices[0] as number] as PixelValues;
    const size = first.data.length;
    const batch = new Float32Array(size * indices.length);
    indices.forEach((index, i) => batch.set((pixels[index] as PixelValues).data, i * size));
    return {
      indices,
      tensor: new Tensor('float32', batch, [indices.length, 3, first.height, first.width]),
    };
  });
}

/** The model's image input: `pixel_values` as exports name it, else its first input. */
export function pixelInputName(inputNames: readonly string[]): string {
  return inputNames.includes('pixel_values') ? 'pixel_values' : (inputNames[0] ?? 'pixel_values');
}
