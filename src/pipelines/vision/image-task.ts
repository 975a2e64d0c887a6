// What an image task tells the registry about its input: an image a route reads and checks
// itself (src/route/image-input.ts, held to limits.maxImageBytes and maxImagePixels, not to the
// text limits), one batch row per image, because every image is resized to the model's input.
import { UNIT_COST, type TaskDefinition } from '../task-definition.ts';

export const imageInput = {
  inputSchema(input, check) {
    if (typeof input !== 'string' && !(input instanceof Uint8Array))
      check.fail("an image: base64 or a path (a string), or the record's bytes");
  },
  inputKind: 'image',
  cost: () => Promise.resolve(UNIT_COST),
} satisfies Pick<TaskDefinition, 'inputSchema' | 'inputKind' | 'cost'>;
