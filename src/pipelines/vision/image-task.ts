// What an image task tells the registry about its input: an image a route reads and checks
// itself (held to limits.maxImageBytes and maxImagePixels), one batch row per image, because
// every image is resized to the model's input.
import { fileInput } from '../task-definition.ts';

export const imageInput = fileInput(
  'image',
  "an image: base64 or a path (a string), or the record's bytes",
);
