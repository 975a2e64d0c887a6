// Where onnxruntime-node keeps its native files: its binding, the ONNX Runtime library both of our
// bindings run, and the execution-provider libraries `npm run gpu:install` adds beside them.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export function onnxRuntimeBinDir(): string | undefined {
  try {
    const pkg = createRequire(import.meta.url).resolve('onnxruntime-node/package.json');
    return join(dirname(pkg), 'bin', 'napi-v6', process.platform, process.arch);
  } catch {
    return undefined;
  }
}

const LIBRARY_FILE: Partial<Record<NodeJS.Platform, string>> = {
  linux: 'libonnxruntime.so.1',
  darwin: 'libonnxruntime.1.dylib',
  win32: 'onnxruntime.dll',
};

/** The ONNX Runtime shared library onnxruntime-node loads. */
export function onnxRuntimeLibraryPath(): string {
  const dir = onnxRuntimeBinDir();
  const file = LIBRARY_FILE[process.platform];
  if (dir === undefined || file === undefined)
    throw new Error(`no ONNX Runtime library is known for ${process.platform}/${process.arch}`);
  return join(dir, file);
}
