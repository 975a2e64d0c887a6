// npm run gpu:install [-- --source pypi|nuget] [--wheel FILE] [--check] [--prefix DIR]
//
// Puts the CUDA (and TensorRT) provider libraries of the ONNX Runtime release that onnxruntime-node
// was built from beside its libonnxruntime.so.1, where its binding loads them. PyPI's
// onnxruntime-gpu wheel is the default source (CUDA 13; npm and PyPI are what most networks allow);
// onnxruntime-node's own NuGet route (CUDA 12) is kept for networks that reach NuGet.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { checkLibraries, formatReport } from './library-check.ts';
import { extractProviders, inspectProviders, libraryHasVersion } from './provider-files.ts';
import { downloadWheel, findWheel, wheelMachine } from './pypi-wheel.ts';

export interface OnnxRuntimeNode {
  version: string;
  packageDir: string;
  binDir: string;
}

export function locateOnnxRuntimeNode(prefix: string): OnnxRuntimeNode {
  const packageDir = join(prefix, 'node_modules', 'onnxruntime-node');
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as {
    version: string;
  };
  const binDir = join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
  return { version: manifest.version, packageDir, binDir };
}

/** `onnxruntime_gpu-1.30.0-cp311-...whl` -> `1.30.0`. */
export function wheelVersion(filename: string): string | undefined {
  return /onnxruntime_gpu-([^-]+)-/.exec(filename)?.[1];
}

export async function installFromWheel(ort: OnnxRuntimeNode, wheelPath: string): Promise<string[]> {
  const fileVersion = wheelVersion(basename(wheelPath));
  if (fileVersion !== ort.version) {
    throw new Error(
      `${wheelPath} is onnxruntime-gpu ${fileVersion ?? '(unknown version)'} but onnxruntime-node ` +
        `is ${ort.version}: a provider must come from the same release`,
    );
  }
  // Staged beside the target and renamed in, so a running worker never maps a half-written file
  // and a refused provider never replaces a working one.
  const staging = join(ort.binDir, `.gpu-install-${process.pid}`);
  mkdirSync(staging, { recursive: true });
  try {
    const written = await extractProviders(wheelPath, staging);
    const cuda = join(staging, 'libonnxruntime_providers_cuda.so');
    if (!libraryHasVersion(cuda, ort.version)) {
      throw new Error(`the CUDA provider in ${wheelPath} does not carry version ${ort.version}`);
    }
    for (const name of written) renameSync(join(staging, name), join(ort.binDir, name));
    return written;
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

function installFromNuget(ort: OnnxRuntimeNode, prefix: string): void {
  execFileSync(
    process.execPath,
    [join(ort.packageDir, 'script', 'install.js'), '--onnxruntime-node-install=cuda12'],
    { cwd: prefix, stdio: 'inherit' },
  );
}

/** Exit status 0 when the providers are installed at the right version and every library loads. */
export function check(ort: OnnxRuntimeNode, print: (line: string) => void): number {
  const installed = inspectProviders(ort.binDir, ort.version);
  print(`onnxruntime-node ${ort.version} in ${ort.binDir}`);
  for (const name of installed.present) {
    const mismatch = installed.mismatched.includes(name);
    print(`  ${mismatch ? 'WRONG VERSION' : 'installed'} ${name}`);
  }
  for (const name of installed.missing) print(`  not installed ${name}`);
  if (installed.missing.length > 0) {
    print('run `npm run gpu:install` to install the CUDA provider');
    return 1;
  }
  if (installed.mismatched.length > 0) {
    print(`reinstall with \`npm run gpu:install\`: the provider must be ${ort.version}`);
    return 1;
  }
  const report = checkLibraries(join(ort.binDir, 'libonnxruntime_providers_cuda.so'));
  print(formatReport(report));
  if (report.missing.includes('libcuda.so.1')) {
    print('libcuda.so.1 comes with the NVIDIA driver, not with CUDA: this machine has no driver');
  }
  return report.missing.length === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      source: { type: 'string', default: 'pypi' },
      wheel: { type: 'string' },
      check: { type: 'boolean', default: false },
      prefix: { type: 'string', default: process.cwd() },
      cache: { type: 'string' },
      index: { type: 'string', default: 'https://pypi.org/simple' },
    },
  });
  const print = (line: string): void => void process.stdout.write(`${line}\n`);
  const prefix = resolve(values.prefix);
  if (process.platform !== 'linux') {
    print(`the CUDA provider is installed on Linux only (this is ${process.platform})`);
    return 2;
  }
  const ort = locateOnnxRuntimeNode(prefix);
  if (values.check) return check(ort, print);
  if (values.source === 'nuget') {
    installFromNuget(ort, prefix);
  } else if (values.source === 'pypi') {
    let wheelPath = values.wheel;
    if (wheelPath === undefined) {
      const wheel = await findWheel(ort.version, wheelMachine(), values.index);
      print(`downloading ${wheel.filename} (${Math.round(wheel.size / 2 ** 20)} MiB)`);
      wheelPath = await downloadWheel(wheel, resolve(values.cache ?? join(prefix, '.cache/gpu')));
    }
    const written = await installFromWheel(ort, resolve(wheelPath));
    print(`installed ${written.join(', ')} into ${ort.binDir}`);
  } else {
    print(`--source must be 'pypi' or 'nuget', not '${values.source}'`);
    return 2;
  }
  check(ort, print);
  return 0;
}

if (import.meta.main) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(
        `gpu:install: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exit(2);
    },
  );
}
