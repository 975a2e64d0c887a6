// Tasks whose input is an image: their routes read image bytes (docs/security.md#image-inputs).
// A file of its own so the config check does not load the image decoder.
export const IMAGE_TASKS: ReadonlySet<string> = new Set(['imageClassification']);
