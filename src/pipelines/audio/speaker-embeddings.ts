// The speaker a SpeechT5 voice is spoken in: an x-vector (512 floats for microsoft/speecht5_tts).
// Python's pipeline has no default and fails without one (`speaker_embeddings` must be specified),
// so the worker takes it from the record, else from the pipeline's option, else from a file in the
// model folder: speaker_embeddings.npy (numpy.save of a float32 or float64 vector) or
// speaker_embeddings.bin (raw little-endian float32, the file transformers.js's examples use).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ModelFolderError } from '../../errors.ts';

export const SPEAKER_FILES = ['speaker_embeddings.npy', 'speaker_embeddings.bin'] as const;

/** The x-vector in a .npy or .bin file; `field` names it in errors. */
export async function readSpeakerFile(path: string, field: string): Promise<Float32Array> {
  const bytes = await readFile(path).catch((cause: unknown) => {
    throw new ModelFolderError(`cannot read the speaker embeddings ${path}`, { cause, field });
  });
  return path.endsWith('.npy') ? parseNpy(bytes, path, field) : rawFloat32(bytes, path, field);
}

/** The model folder's default speaker, or undefined when it has none. */
export async function folderSpeaker(
  folder: string,
  files: readonly string[],
): Promise<Float32Array | undefined> {
  const name = SPEAKER_FILES.find((f) => files.includes(f));
  return name === undefined ? undefined : readSpeakerFile(join(folder, name), name);
}

function rawFloat32(bytes: Uint8Array, path: string, field: string): Float32Array {
  if (bytes.length === 0 || bytes.length % 4 !== 0)
    throw new ModelFolderError(`${path} is not a whole number of float32 values`, { field });
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Float32Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(i * 4, true));
}

/** NumPy's .npy format, version 1-3: magic, header length, a Python dict literal, the data. */
function parseNpy(bytes: Uint8Array, path: string, field: string): Float32Array {
  const fail = (why: string): never => {
    throw new ModelFolderError(`${path}: ${why}; save a float32 vector with numpy.save`, { field });
  };
  const magic = '\x93NUMPY';
  if (bytes.length < 10 || String.fromCharCode(...bytes.subarray(0, 6)) !== magic)
    fail('not a .npy file');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const major = bytes[6] ?? 0;
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(bytes.subarray(start, start + headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  if (/'fortran_order':\s*True/.test(header)) fail('Fortran-ordered arrays are not read');
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1] ?? '';
  const dims = shape
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d !== '')
    .map(Number);
  const size = dims.reduce((a, b) => a * b, 1);
  // A (D,) vector or a (1, D) row, as Python's pipeline takes it.
  if (dims.length === 0 || dims.length > 2 || (dims.length === 2 && dims[0] !== 1))
    fail(`shape (${shape}) is not a vector`);
  const data = start + headerLength;
  if (descr === '<f4') {
    if (bytes.length < data + size * 4) fail('the file is shorter than its shape');
    return Float32Array.from({ length: size }, (_, i) => view.getFloat32(data + i * 4, true));
  }
  if (descr === '<f8') {
    if (bytes.length < data + size * 8) fail('the file is shorter than its shape');
    return Float32Array.from({ length: size }, (_, i) => view.getFloat64(data + i * 8, true));
  }
  return fail(`dtype ${descr ?? '(none)'} is not little-endian float32 or float64`);
}
