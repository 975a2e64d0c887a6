// sharp (libvips) is loaded with the first image, not with the module: every inference thread
// imports the vision tasks through the task registry, and sharp's ~2.5 MB of heap would make each
// garbage collection of a text-only thread dearer (issue 15).
import type Sharp from 'sharp';

let loading: Promise<typeof Sharp> | undefined;

export function loadSharp(): Promise<typeof Sharp> {
  loading ??= import('sharp').then((module) => module.default);
  return loading;
}
