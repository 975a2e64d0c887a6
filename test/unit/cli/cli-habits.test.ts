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

  it("starts itself again once with the worker settings it lacks, keeping an operator's own", async () => {
    // A preload prints, in each process image the command runs as, what bin/worker-process.js sets.
    const dir = await mkdtemp(join(tmpdir(), 'hugot-worker-process-'));
    const preload = join(dir, 'settings.mjs');
    await writeFile(
      preload,
      "const semi = process.execArgv.find((a) => a.startsWith('--max-semi-space-size')) ?? 'none';\n" +
        "process.stdout.write(`image arenas=${process.env.MALLOC_ARENA_MAX ?? 'unset'} semi=${semi} pid=${process.pid}\\n`);\n",
    );
    const images = async (env: NodeJS.ProcessEnv, flags: string[] = []): Promise<string[][]> => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        [...flags, '--import', preload, 'bin/hugot-stream.js', '--version'],
        { cwd: ROOT, env },
      );
      const lines = stdout.trim().split('\n');
      expect(lines.at(-1)).toBe(packageVersion());
      return lines.filter((l) => l.startsWith('image ')).map((l) => l.split(' ').slice(1));
    };
    const bare = { ...process.env };
    for (const name of ['MALLOC_ARENA_MAX', 'NODE_OPTIONS', 'HUGOT_WORKER_PROCESS'])
      delete bare[name];
    try {
      if (process.platform !== 'linux') {
        expect(await images(bare)).toHaveLength(1);
        return;
      }
      const started = await images(bare);
      expect(started.map(([arenas, semi]) => `${arenas} ${semi}`)).toEqual([
        'arenas=unset semi=none',
        'arenas=2 semi=--max-semi-space-size=1',
      ]);
      // execve: the same process, so signals and a supervisor's pid still reach it.
      expect(new Set(started.map((image) => image[2])).size).toBe(1);
      // An operator's own values stay; only what is missing is added.
      const own = await images({ ...bare, MALLOC_ARENA_MAX: '4' }, ['--max-semi-space-size=8']);
      expect(own.map(([arenas, semi]) => `${arenas} ${semi}`)).toEqual([
        'arenas=4 semi=--max-semi-space-size=8',
      ]);
      const half = await images({ ...bare, MALLOC_ARENA_MAX: '4' });
      expect(half.at(-1)?.slice(0, 2)).toEqual(['arenas=4', 'semi=--max-semi-space-size=1']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
