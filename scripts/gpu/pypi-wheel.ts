// Finds and downloads PyPI's onnxruntime-gpu wheel for one ONNX Runtime version. The wheel is only
// a zip that carries the CUDA provider libraries; no Python runs, here or later.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';

export interface WheelFile {
  filename: string;
  url: string;
  sha256: string;
  size: number;
}

interface SimpleIndex {
  files: { filename: string; url: string; hashes: { sha256?: string }; size?: number }[];
}

const PYPI_SIMPLE = 'https://pypi.org/simple';

/** The wheel tag's machine name for Node's `process.arch`. */
export function wheelMachine(arch: string = process.arch): string {
  if (arch === 'x64') return 'x86_64';
  if (arch === 'arm64') return 'aarch64';
  throw new Error(`no onnxruntime-gpu wheel is built for the ${arch} architecture`);
}

/** Any CPython tag will do: the provider libraries inside do not depend on Python's version. */
export function pickWheel(
  files: SimpleIndex['files'],
  version: string,
  machine: string,
): WheelFile | undefined {
  const pattern = new RegExp(
    `^onnxruntime_gpu-${version.replaceAll('.', '\\.')}-cp\\d+-cp\\d+-manylinux[^-]*_${machine}\\.whl$`,
  );
  const matches = files.filter((f) => pattern.test(f.filename) && f.hashes.sha256 !== undefined);
  matches.sort((a, b) => b.filename.localeCompare(a.filename));
  const best = matches[0];
  if (best === undefined) return undefined;
  return {
    filename: best.filename,
    url: best.url,
    sha256: best.hashes.sha256 as string,
    size: best.size ?? 0,
  };
}

export async function findWheel(
  version: string,
  machine: string,
  index = PYPI_SIMPLE,
): Promise<WheelFile> {
  const response = await fetch(`${index}/onnxruntime-gpu/`, {
    headers: { accept: 'application/vnd.pypi.simple.v1+json' },
  });
  if (!response.ok) {
    throw new Error(`PyPI answered ${response.status} for onnxruntime-gpu (${index})`);
  }
  const listing = (await response.json()) as SimpleIndex;
  const wheel = pickWheel(listing.files, version, machine);
  if (wheel === undefined) {
    throw new Error(
      `PyPI has no onnxruntime-gpu ${version} wheel for linux ${machine}; onnxruntime-node ` +
        `${version} needs exactly that version (use --source nuget or --wheel <file>)`,
    );
  }
  return wheel;
}

export async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** Downloads into `cacheDir` once; a cached file is trusted only when its hash still matches. */
export async function downloadWheel(wheel: WheelFile, cacheDir: string): Promise<string> {
  mkdirSync(cacheDir, { recursive: true });
  const target = join(cacheDir, wheel.filename);
  if (existsSync(target) && (await sha256Of(target)) === wheel.sha256) return target;
  const response = await fetch(wheel.url);
  if (!response.ok || response.body === null) {
    throw new Error(`download of ${wheel.url} failed with status ${response.status}`);
  }
  const partial = `${target}.partial`;
  await pipeline(Readable.fromWeb(response.body), createWriteStream(partial));
  const digest = await sha256Of(partial);
  if (digest !== wheel.sha256) {
    throw new Error(`${wheel.filename}: sha256 ${digest} does not match PyPI's ${wheel.sha256}`);
  }
  renameSync(partial, target);
  return target;
}
