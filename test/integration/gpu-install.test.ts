// `npm run gpu:install` on a fresh clone: a temporary prefix holding a copy of onnxruntime-node
// gets the CUDA provider from PyPI's onnxruntime-gpu wheel, and `--check` reports which CUDA
// libraries the loader finds. The repo's own `.cache/gpu` holds the wheel across runs (~235 MB);
// the PyPI index is still asked which wheel to use.
import { execFile, execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installFromWheel, locateOnnxRuntimeNode } from '../../scripts/gpu/install.ts';
import { libraryHasVersion } from '../../scripts/gpu/provider-files.ts';

const run = promisify(execFile);
const REPO = resolve(import.meta.dirname, '../..');
const NODE = join(REPO, 'node_modules/node/bin/node');
const INSTALL = join(REPO, 'scripts/gpu/install.ts');
const CACHE = join(REPO, '.cache/gpu');
const PROVIDERS = [
  'libonnxruntime_providers_shared.so',
  'libonnxruntime_providers_cuda.so',
  'libonnxruntime_providers_tensorrt.so',
];

const repoOrt = locateOnnxRuntimeNode(REPO);
const temporary: string[] = [];

function tempDir(label: string): string {
  const dir = mkdtempSync(join(tmpdir(), `hugot-gpu-${label}-`));
  temporary.push(dir);
  return dir;
}

/** A prefix that looks like a fresh clone's: onnxruntime-node copied (not linked) from the repo's. */
function freshPrefix(): string {
  const prefix = tempDir('prefix');
  const packageDir = join(prefix, relative(REPO, repoOrt.packageDir));
  const binDir = join(prefix, relative(REPO, repoOrt.binDir));
  mkdirSync(binDir, { recursive: true });
  cpSync(join(repoOrt.packageDir, 'package.json'), join(packageDir, 'package.json'));
  for (const name of ['libonnxruntime.so.1', 'onnxruntime_binding.node']) {
    cpSync(join(repoOrt.binDir, name), join(binDir, name));
  }
  return prefix;
}

/** Any real shared library will do as a stand-in for libcudart: ldd only needs to map it. */
function someSharedLibrary(): string {
  const line = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' })
    .split('\n')
    .find((l) => l.trim().startsWith('libm.so.6 ') && l.includes('x86-64'));
  return line?.split('=>')[1]?.trim() ?? '/lib/x86_64-linux-gnu/libm.so.6';
}

/** execFile's rejection carries the exit code and output; a clean exit is code 0. */
async function runInstall(
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(NODE, [INSTALL, ...args], { cwd: REPO, env });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { code: failed.code, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

afterAll(() => {
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});

describe('gpu:install into a fresh prefix', () => {
  let prefix: string;
  let install: { code: number; output: string };

  beforeAll(async () => {
    prefix = freshPrefix();
    install = await runInstall(['--prefix', prefix, '--cache', CACHE]);
  });

  it('installs the provider libraries of onnxruntime-node’s own version', () => {
    expect(install.output).toContain('installed');
    expect(install.code).toBe(0);
    const ort = locateOnnxRuntimeNode(prefix);
    for (const name of PROVIDERS) expect(existsSync(join(ort.binDir, name)), name).toBe(true);
    expect(ort.version).toBe(repoOrt.version);
    expect(
      libraryHasVersion(join(ort.binDir, 'libonnxruntime_providers_cuda.so'), ort.version),
    ).toBe(true);
  });

  it('leaves the repo’s own onnxruntime-node alone (other tests need it without CUDA)', () => {
    expect(install.code).toBe(0);
    for (const name of PROVIDERS) expect(existsSync(join(repoOrt.binDir, name)), name).toBe(false);
  });

  it('--check reports found and missing CUDA libraries and where missing ones are', async () => {
    expect(install.code).toBe(0);
    const loaderDir = tempDir('ld');
    const cudart = join(loaderDir, 'libcudart.so.13');
    symlinkSync(someSharedLibrary(), cudart);
    const venv = tempDir('venv');
    const curandDir = join(venv, 'lib/python3.11/site-packages/nvidia/curand/lib');
    mkdirSync(curandDir, { recursive: true });
    writeFileSync(join(curandDir, 'libcurand.so.10'), '');

    const check = await runInstall(['--prefix', prefix, '--check'], {
      ...process.env,
      LD_LIBRARY_PATH: loaderDir,
      VIRTUAL_ENV: venv,
    });
    expect(check.code, check.output).toBe(1);
    expect(check.output).toMatch(/installed libonnxruntime_providers_cuda\.so/);
    expect(check.output).toContain(`found   libcudart.so.13 (${cudart})`);
    expect(check.output).toMatch(/missing libcublas\.so\.13\n/);
    expect(check.output).toMatch(/missing libcudnn\.so\.9\n/);
    const suggestion = /export LD_LIBRARY_PATH=(\S+)\$\{LD_LIBRARY_PATH/.exec(check.output);
    expect(suggestion?.[1]?.split(':'), check.output).toContain(curandDir);
  });
});

describe('gpu:install from a wheel of another version', () => {
  it('refuses it and writes nothing beside libonnxruntime.so.1', async () => {
    const wheel = readdirSync(CACHE).find((name) =>
      name.startsWith(`onnxruntime_gpu-${repoOrt.version}-`),
    );
    expect(wheel, `the wheel cached in ${CACHE} by the test above`).toBeDefined();
    const renamed = join(
      tempDir('wheel'),
      'onnxruntime_gpu-1.29.0-cp311-cp311-manylinux_2_28_x86_64.whl',
    );
    symlinkSync(join(CACHE, wheel as string), renamed);
    const ort = locateOnnxRuntimeNode(freshPrefix());
    const before = readdirSync(ort.binDir).sort();

    await expect(installFromWheel(ort, renamed)).rejects.toThrow(
      new RegExp(
        `onnxruntime-gpu 1\\.29\\.0 but onnxruntime-node is ${ort.version.replaceAll('.', '\\.')}`,
      ),
    );
    expect(readdirSync(ort.binDir).sort()).toEqual(before);
  });
});
