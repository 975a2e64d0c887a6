// The preprocessing goldens the model kit writes for image models (scripts/models/kit/
// image_fixtures.py): per image, the processor's exact pixel values as little-endian float32 in
// base64, and checks that compare our preprocessor with them.
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { decodeImage } from '../../src/pipelines/vision/image-decode.ts';
import {
  compilePreprocessor,
  preprocessImage,
} from '../../src/pipelines/vision/image-preprocess.ts';
import type { LoadedModel } from '../../src/pipelines/runtime/model-store.ts';
import { compareDeep } from './compare.ts';
import { modelPath, readGoldens } from './goldens.ts';
import { GOLDEN } from './parity-case.ts';

export interface PreprocessingGolden {
  image: string;
  size: [number, number];
  shape: [number, number, number];
  pixel_values_f32le_base64: string;
  pixel_mask_ones?: number;
}

export function preprocessingGoldens(model: string): PreprocessingGolden[] {
  return (readGoldens(model) as unknown as { preprocessing: PreprocessingGolden[] }).preprocessing;
}

export function float32FromBase64(text: string): Float32Array {
  const bytes = Buffer.from(text, 'base64');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Float32Array.from({ length: bytes.byteLength / 4 }, (_, i) =>
    view.getFloat32(i * 4, true),
  );
}

/** A processor recipe the kit ran without a model: its config and its pixel values. */
export interface ProcessorGoldens {
  config: Record<string, unknown>;
  preprocessing: PreprocessingGolden[];
}

/**
 * One test per image: our model input equals the Python processor's, shape and values. The
 * processor is the model folder's, or `other`'s config (images still from the model's folder).
 */
export function pixelValueCases(
  model: string,
  load: (m: string) => Promise<LoadedModel>,
  other?: ProcessorGoldens,
): void {
  for (const golden of other?.preprocessing ?? preprocessingGoldens(model)) {
    it(golden.image, GOLDEN, async ({ task }) => {
      const loaded = await load(model);
      const image = await decodeImage(join(modelPath(model), golden.image), 'image');
      const pixels = preprocessImage(
        image,
        compilePreprocessor(other?.config ?? loaded.preprocessor, loaded.folder),
      );
      expect([3, pixels.height, pixels.width]).toEqual(golden.shape);
      if (golden.pixel_mask_ones !== undefined)
        expect(golden.pixel_mask_ones).toBe(pixels.height * pixels.width);
      const expected = float32FromBase64(golden.pixel_values_f32le_base64);
      const comparison = compareDeep(Array.from(pixels.data), Array.from(expected), 1e-6);
      task.meta.maxAbsDiff = comparison.maxAbsDiff;
      expect(comparison.differences).toEqual([]);
    });
  }
}
