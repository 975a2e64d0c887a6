// The input check every image task shares. The route reads and checks the image itself
// (src/route/image-input.ts): its size is held to limits.maxImageBytes and maxImagePixels, not to
// the text limits.
import type { TaskDefinition } from '../task-definition.ts';

export const imageInput = {
  inputSchema(input, check) {
    if (typeof input !== 'string' && !(input instanceof Uint8Array))
      check.fail("an image: base64 or a path (a string), or the record's bytes");
  },
  inputKind: 'image',
} satisfies Pick<TaskDefinition, 'inputSchema' | 'inputKind'>;
