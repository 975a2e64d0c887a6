// Which CUDA and cuDNN libraries the CUDA provider will find when it loads: the dynamic loader's
// own view (ldd) for what it links, and the loader's search path for cuDNN, which ONNX Runtime
// opens itself at run time and ldd therefore cannot see.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export interface LibraryStatus {
  name: string;
  /** Where the loader resolves it; undefined when it is missing. */
  path: string | undefined;
}

export interface LibraryReport {
  libraries: LibraryStatus[];
  missing: string[];
  /** Folders on this machine that hold a missing library (pip's nvidia-* packages, CUDA). */
  suggestions: string[];
}

/** NVIDIA's own libraries are what a machine lacks; the C and C++ runtimes are always there. */
const NVIDIA_LIBRARY = /^lib(cu|nv)/;
const RUNTIME_LOADED = ['libcudnn.so.9'];

export function parseLdd(output: string): LibraryStatus[] {
  const statuses: LibraryStatus[] = [];
  for (const line of output.split('\n')) {
    const match = /^\s*(\S+)\s+=>\s+(not found|(\S+))/.exec(line);
    if (match === null) continue;
    const name = match[1] as string;
    statuses.push({ name, path: match[2] === 'not found' ? undefined : match[3] });
  }
  return statuses;
}

export function checkLibraries(
  providerPath: string,
  env: NodeJS.ProcessEnv = process.env,
): LibraryReport {
  const ldd = execFileSync('ldd', [providerPath], { encoding: 'utf8', env });
  const linked = parseLdd(ldd).filter((s) => NVIDIA_LIBRARY.test(s.name));
  const loaded = RUNTIME_LOADED.map((name) => ({ name, path: findOnLoaderPath(name, env) }));
  const libraries = [...linked, ...loaded];
  const missing = libraries.filter((s) => s.path === undefined).map((s) => s.name);
  return { libraries, missing, suggestions: suggestFolders(missing, env) };
}

function findOnLoaderPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env['LD_LIBRARY_PATH'] ?? '').split(':').filter(Boolean)) {
    if (existsSync(join(dir, name))) return join(dir, name);
  }
  try {
    const cache = execFileSync('ldconfig', ['-p'], { encoding: 'utf8' });
    const line = cache.split('\n').find((l) => l.trim().startsWith(`${name} `));
    return line?.split('=>')[1]?.trim();
  } catch {
    return undefined;
  }
}

/** Python environments that hold NVIDIA's wheels, and the usual CUDA install folders. */
function candidateFolders(env: NodeJS.ProcessEnv): string[] {
  const roots = ['/usr/local/cuda/lib64', '/usr/lib/x86_64-linux-gnu'];
  const pythonLibs = ['/usr/lib', '/usr/local/lib', '/opt/conda/lib'];
  if (env['VIRTUAL_ENV'] !== undefined) pythonLibs.push(join(env['VIRTUAL_ENV'], 'lib'));
  if (env['HOME'] !== undefined) pythonLibs.push(join(env['HOME'], '.local/lib'));
  for (const base of safeList('/opt')) pythonLibs.push(join('/opt', base, '.venv/lib'));
  for (const lib of pythonLibs) {
    for (const python of safeList(lib).filter((d) => d.startsWith('python3'))) {
      for (const packages of ['site-packages', 'dist-packages']) {
        const nvidia = join(lib, python, packages, 'nvidia');
        for (const pkg of safeList(nvidia)) {
          roots.push(join(nvidia, pkg, 'lib'));
          for (const sub of safeList(join(nvidia, pkg))) roots.push(join(nvidia, pkg, sub, 'lib'));
        }
      }
    }
  }
  return roots;
}

function suggestFolders(missing: string[], env: NodeJS.ProcessEnv): string[] {
  const folders = new Set<string>();
  for (const dir of candidateFolders(env)) {
    if (missing.some((name) => existsSync(join(dir, name)))) folders.add(dir);
  }
  return [...folders];
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export function formatReport(report: LibraryReport): string {
  const lines = report.libraries.map(
    (s) =>
      `  ${s.path === undefined ? 'missing' : 'found  '} ${s.name}${s.path ? ` (${s.path})` : ''}`,
  );
  if (report.missing.length === 0) {
    lines.push('every CUDA and cuDNN library the provider needs is found');
  } else {
    lines.push(`missing: ${report.missing.join(', ')}`);
    lines.push(
      report.suggestions.length > 0
        ? `found on this machine; add them to the loader's path:\n  export LD_LIBRARY_PATH=${report.suggestions.join(':')}\${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}`
        : 'install CUDA 13 (cuBLAS, cuRAND, the runtime) and cuDNN 9, e.g. an nvidia/cuda:13.0.*-cudnn-runtime image, or pip install nvidia-cublas nvidia-curand nvidia-cuda-runtime nvidia-cudnn-cu13, then add their lib folders to LD_LIBRARY_PATH',
    );
  }
  return lines.join('\n');
}
