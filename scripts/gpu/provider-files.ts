// The provider libraries onnxruntime-node loads from beside its libonnxruntime.so.1, taken out of
// a wheel, and the version check that refuses a provider built for another ONNX Runtime.
import { chmodSync, createWriteStream, existsSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';

/** What the CUDA provider needs; TensorRT's comes along when the wheel has it. */
export const PROVIDER_LIBRARIES = [
  'libonnxruntime_providers_shared.so',
  'libonnxruntime_providers_cuda.so',
] as const;
export const OPTIONAL_LIBRARIES = ['libonnxruntime_providers_tensorrt.so'] as const;

const WHEEL_FOLDER = 'onnxruntime/capi/';

export async function extractProviders(wheelPath: string, intoDir: string): Promise<string[]> {
  const wanted = new Set<string>([...PROVIDER_LIBRARIES, ...OPTIONAL_LIBRARIES]);
  const zip = await openZip(wheelPath);
  const written: string[] = [];
  try {
    for await (const entry of zipEntries(zip)) {
      const name = basename(entry.fileName);
      if (!entry.fileName.startsWith(WHEEL_FOLDER) || !wanted.has(name)) continue;
      const target = join(intoDir, name);
      await pipeline(await zip.openReadStreamPromise(entry), createWriteStream(target));
      chmodSync(target, 0o755);
      written.push(name);
    }
  } finally {
    zip.close();
  }
  const missing = PROVIDER_LIBRARIES.filter((name) => !written.includes(name));
  if (missing.length > 0) {
    throw new Error(`${basename(wheelPath)} does not hold ${missing.join(', ')}`);
  }
  return written;
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: false }, (error, zip) => {
      if (error === null) resolve(zip);
      else reject(error);
    });
  });
}

async function* zipEntries(zip: yauzl.ZipFile): AsyncGenerator<yauzl.Entry> {
  for (;;) {
    const entry = await new Promise<yauzl.Entry | undefined>((resolve, reject) => {
      const onEntry = (e: yauzl.Entry): void => {
        cleanup();
        resolve(e);
      };
      const onEnd = (): void => {
        cleanup();
        resolve(undefined);
      };
      const onError = (error: Error): void => {
        cleanup();
        reject(error);
      };
      const cleanup = (): void => {
        zip.off('entry', onEntry).off('end', onEnd).off('error', onError);
      };
      zip.on('entry', onEntry).on('end', onEnd).on('error', onError);
      zip.readEntry();
    });
    if (entry === undefined) return;
    yield entry;
  }
}

/**
 * ONNX Runtime compiles its version into each library as a NUL-terminated string. A provider from
 * another release loads, then fails on its first session with an API-version error far from the
 * cause, so the install checks it here.
 */
export function libraryHasVersion(path: string, version: string): boolean {
  const needle = Buffer.from(`\0${version}\0`, 'latin1');
  return readFileSync(path).includes(needle);
}

export interface InstalledProviders {
  binDir: string;
  present: string[];
  missing: string[];
  /** Libraries whose embedded version is not onnxruntime-node's. */
  mismatched: string[];
}

export function inspectProviders(binDir: string, version: string): InstalledProviders {
  const present: string[] = [];
  const missing: string[] = [];
  const mismatched: string[] = [];
  for (const name of [...PROVIDER_LIBRARIES, ...OPTIONAL_LIBRARIES]) {
    const path = join(binDir, name);
    if (!existsSync(path)) {
      if ((PROVIDER_LIBRARIES as readonly string[]).includes(name)) missing.push(name);
      continue;
    }
    present.push(name);
    // Only the CUDA provider carries the version string; the shared bridge and TensorRT's
    // provider come from the same wheel and are checked through it.
    if (name === 'libonnxruntime_providers_cuda.so' && !libraryHasVersion(path, version)) {
      mismatched.push(name);
    }
  }
  return { binDir, present, missing, mismatched };
}
