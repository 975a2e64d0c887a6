import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { USAGE_EXIT_CODE } from '../../../src/cli/main.ts';
import { packageVersion } from '../../../src/version.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(...args: string[]): Promise<Ran> {
  return promisify(execFile)(process.execPath, ['src/cli/main.ts', ...args], { cwd: ROOT }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => err,
  );
}

function withoutCacheSwitch(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const rest = { ...env };
  delete rest.NODE_DISABLE_COMPILE_CACHE;
  return rest;
}

describe('the command line', () => {
  it('prints the package version for --version and -V, on stdout, exit 0', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(packageVersion()).toBe(pkg.version);
    for (const flag of ['--version', '-V']) {
      const ran = await cli(flag);
      expect(ran.code).toBe(0);
      expect(ran.stdout.trim()).toBe(pkg.version);
      expect(ran.stderr).toBe('');
    }
  });

  it('puts --help on stdout with exit 0', async () => {
    const ran = await cli('--help');
    expect(ran.code).toBe(0);
    expect(ran.stdout).toMatch(/^Usage: hugot-stream \[options\] \[command\]/);
    expect(ran.stdout).toContain('validate-config <file>');
  });

  it('sends usage errors to stderr with the usage line and exit 2', async () => {
    for (const args of [['frobnicate'], ['validate-config'], ['run', '--bogus'], []]) {
      const ran = await cli(...args);
      expect(ran.code, args.join(' ')).toBe(USAGE_EXIT_CODE);
      expect(ran.stdout, args.join(' ')).toBe('');
      expect(ran.stderr, args.join(' ')).toMatch(/Usage: hugot-stream/);
    }
    const unknown = await cli('frobnicate');
    expect(unknown.stderr).toContain("unknown command 'frobnicate'");
  });

  it('loads nothing but commander before a command runs, so --help does not wait on the worker', async () => {
    const source = await readFile(join(ROOT, 'src/cli/main.ts'), 'utf8');
    const staticImports = [...source.matchAll(/^import .* from '([^']+)';$/gm)].map((m) => m[1]);
    expect(staticImports.sort()).toEqual(['../version.ts', 'commander']);
  });

  it('is committed executable, so npx does not change its mode in the checkout', async () => {
    for (const file of ['src/cli/main.ts', 'bin/hugot-stream.js']) {
      const { stdout } = await promisify(execFile)('git', ['ls-files', '-s', file], { cwd: ROOT });
      expect(stdout.split(' ')[0], file).toBe('100755');
    }
  });

  it('is installed as bin/hugot-stream.js, which runs the same commands through the compile cache', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(pkg.bin['hugot-stream']).toBe('./bin/hugot-stream.js');
    const cache = await mkdtemp(join(tmpdir(), 'hugot-compile-cache-'));
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['bin/hugot-stream.js', '--version'],
        { cwd: ROOT, env: { ...withoutCacheSwitch(process.env), NODE_COMPILE_CACHE: cache } },
      );
      expect(stdout.trim()).toBe(packageVersion());
      // Node writes one folder per Node version, holding the entries of the modules it compiled.
      const [versionFolder] = await readdir(cache);
      expect(versionFolder).toMatch(/^v\d+/);
      expect((await readdir(join(cache, versionFolder ?? ''))).length).toBeGreaterThan(0);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });

  it('starts itself again with two glibc arenas unless MALLOC_ARENA_MAX is already set', async () => {
    // A preload prints the variable in each process image the command runs as.
    const dir = await mkdtemp(join(tmpdir(), 'hugot-arenas-'));
    const preload = join(dir, 'arenas.mjs');
    await writeFile(
      preload,
      "process.stdout.write(`arenas=${process.env.MALLOC_ARENA_MAX ?? 'unset'} pid=${process.pid}\\n`);\n",
    );
    const run = (env: NodeJS.ProcessEnv) =>
      promisify(execFile)(
        process.execPath,
        ['--import', preload, 'bin/hugot-stream.js', '--version'],
        {
          cwd: ROOT,
          env,
        },
      );
    try {
      const unset = { ...process.env };
      delete unset['MALLOC_ARENA_MAX'];
      const started = await run(unset);
      const lines = started.stdout.trim().split('\n');
      const images = lines.filter((l) => l.startsWith('arenas='));
      if (process.platform === 'linux') {
        expect(images.map((l) => l.split(' ')[0])).toEqual(['arenas=unset', 'arenas=2']);
        // execve: the same process, so signals and a supervisor's pid still reach it.
        expect(new Set(images.map((l) => l.split(' ')[1])).size).toBe(1);
      }
      expect(lines.at(-1)).toBe(packageVersion());
      const chosen = await run({ ...process.env, MALLOC_ARENA_MAX: '4' });
      expect(chosen.stdout.split('\n').filter((l) => l.startsWith('arenas='))).toHaveLength(1);
      expect(chosen.stdout).toContain('arenas=4');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
