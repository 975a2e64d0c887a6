import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
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
    const { stdout } = await promisify(execFile)('git', ['ls-files', '-s', 'src/cli/main.ts'], {
      cwd: ROOT,
    });
    expect(stdout.split(' ')[0]).toBe('100755');
  });
});
