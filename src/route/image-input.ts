// A record's image as bytes, decided in the main thread before the record joins a batch. By
// default a string is the image itself in base64, so a record cannot make the worker open a file;
// a route that opts in (input.images.from: path) reads files, and only under its root: the path
// is resolved with symlinks, and every failure (missing, outside the root, not a file, unreadable)
// reads the same, so a record cannot learn which files exist. The header's width and height are
// checked against limits.maxImagePixels before any thread decodes the pixels.
import { open, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { InputError } from '../errors.ts';
import { loadSharp } from '../pipelines/vision/load-sharp.ts';
import { base64Bytes } from './base64-bytes.ts';

export interface ImageInputOptions {
  from: 'base64' | 'path';
  /** from path: the directory image paths must stay under. */
  root?: string | undefined;
  maxPixels: number;
  maxBytes: number;
}

/** A refused image: `reason` is the dead letter's code. */
export class ImageRefusedError extends InputError {
  override name = 'ImageRefusedError';
  readonly reason: 'IMAGE_INVALID' | 'IMAGE_TOO_LARGE';
  constructor(reason: 'IMAGE_INVALID' | 'IMAGE_TOO_LARGE', message: string, field: string) {
    super(message, { field });
    this.reason = reason;
  }
}

export class ImageInputs {
  private readonly options: ImageInputOptions;
  private realRoot: Promise<string> | undefined;

  constructor(options: ImageInputOptions) {
    this.options = options;
  }

  /** The image's encoded bytes, checked to be an image of at most maxPixels pixels. */
  async bytesOf(input: unknown, field: string): Promise<Uint8Array> {
    let bytes: Uint8Array;
    if (input instanceof Uint8Array) bytes = input;
    else if (typeof input === 'string')
      bytes =
        this.options.from === 'path'
          ? await this.readUnderRoot(input, field)
          : decodeBase64(input, field);
    else
      throw new ImageRefusedError(
        'IMAGE_INVALID',
        this.options.from === 'path'
          ? `${field} must be an image path (a string) under input.images.root`
          : `${field} must be an image's bytes in base64 (a string)`,
        field,
      );
    let width: number | undefined;
    let height: number | undefined;
    const sharp = await loadSharp();
    try {
      ({ width, height } = await sharp(bytes).metadata());
    } catch {
      width = undefined;
    }
    if (width === undefined || height === undefined)
      throw new ImageRefusedError(
        'IMAGE_INVALID',
        `${field} is not an image in a format the worker reads (PNG, JPEG, WebP, GIF, TIFF, AVIF)`,
        field,
      );
    if (width * height > this.options.maxPixels)
      throw new ImageRefusedError(
        'IMAGE_TOO_LARGE',
        `${field} is ${width}x${height} pixels, over limits.maxImagePixels (${this.options.maxPixels})`,
        field,
      );
    return bytes;
  }

  private async readUnderRoot(path: string, field: string): Promise<Uint8Array> {
    const refused = (): ImageRefusedError =>
      new ImageRefusedError(
        'IMAGE_INVALID',
        `${field}: no readable image file at that path under input.images.root`,
        field,
      );
    const root = this.options.root as string;
    this.realRoot ??= realpath(root);
    let realRoot: string;
    try {
      realRoot = await this.realRoot;
    } catch {
      this.realRoot = undefined;
      throw refused();
    }
    let real: string;
    try {
      real = await realpath(resolve(realRoot, path));
    } catch {
      throw refused();
    }
    const inside = relative(realRoot, real);
    if (inside === '' || inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside))
      throw refused();
    let file;
    try {
      file = await open(real, 'r');
    } catch {
      throw refused();
    }
    try {
      const stat = await file.stat();
      if (!stat.isFile()) throw refused();
      if (stat.size > this.options.maxBytes)
        throw new ImageRefusedError(
          'IMAGE_TOO_LARGE',
          `${field} is a file of ${stat.size} bytes, over limits.maxImageBytes (${this.options.maxBytes})`,
          field,
        );
      return await file.readFile();
    } catch (err) {
      if (err instanceof ImageRefusedError) throw err;
      throw refused();
    } finally {
      await file.close();
    }
  }
}

function decodeBase64(text: string, field: string): Uint8Array {
  const bytes = base64Bytes(text);
  if (bytes === undefined)
    throw new ImageRefusedError(
      'IMAGE_INVALID',
      `${field} must be an image's bytes in base64 (a path is read only with input.images.from: path)`,
      field,
    );
  return bytes;
}
