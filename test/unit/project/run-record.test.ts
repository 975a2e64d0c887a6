// The run record every bench line ends with (bench/lib/run-record.ts): what machine and command a
// committed figure came from, read back by readme-figures.test.ts.
import { describe, expect, it } from 'vitest';
import { machine, runRecord } from '../../../bench/lib/run-record.ts';

const CPUINFO = [
  'processor\t: 0',
  'model name\t: AMD EPYC 9654 96-Core Processor',
  'flags\t\t: fpu sse4_1 avx avx2 fma avx512f avx512bw avx512_vnni',
  '',
].join('\n');

describe('run record', () => {
  it("reads the CPU model and the kernel-relevant instruction sets from /proc/cpuinfo's text", () => {
    const found = machine(CPUINFO);
    expect(found.cpu).toBe('AMD EPYC 9654 96-Core Processor');
    expect(found.isa).toEqual(['avx2', 'fma', 'avx512f', 'avx512bw', 'avx512_vnni']);
    expect(found.cores).toBeGreaterThan(0);
  });

  it('names no instruction set a CPU does not list', () => {
    const avx2Only = CPUINFO.replace(' avx512f avx512bw avx512_vnni', '');
    expect(machine(avx2Only).isa).toEqual(['avx2', 'fma']);
  });

  it('records the command from the repository root, the commit and the date', () => {
    const now = new Date('2026-12-02T15:00:00Z');
    const record = runRecord(
      ['/usr/bin/node', `${process.cwd()}/bench/throughput.ts`, '--only', 'int8'],
      now,
    );
    expect(record.command).toMatch(/^node .*bench\/throughput\.ts --only int8$/);
    expect(record.commit).toMatch(/^[0-9a-f]{40}$/);
    expect(record.date).toBe('2026-12-02T15:00:00.000Z');
    expect(typeof record.dirty).toBe('boolean');
  });

  it('takes the commit and dirtiness from BENCH_COMMIT and BENCH_DIRTY where the tree has no git', () => {
    const noGit = (): string => '';
    const sha = 'ab'.repeat(20);
    const withEnv = (env: NodeJS.ProcessEnv): ReturnType<typeof runRecord> =>
      runRecord(['node', 'bench/generate.ts'], new Date(), env, noGit);
    const clean = withEnv({ BENCH_COMMIT: sha, BENCH_DIRTY: '0' });
    expect(clean.commit).toBe(sha);
    expect(clean.dirty).toBe(false);
    expect(withEnv({ BENCH_COMMIT: sha, BENCH_DIRTY: '1' }).dirty).toBe(true);
    expect(withEnv({}).commit).toBe('unknown');
  });

  it('prefers the repository over BENCH_COMMIT where git answers', () => {
    const gitOf = (args: string[]): string =>
      args[0] === 'rev-parse' ? 'cd'.repeat(20) + '\n' : ' M src/x.ts\n';
    const record = runRecord(
      ['node', 'x.ts'],
      new Date(),
      { BENCH_COMMIT: 'ab'.repeat(20), BENCH_DIRTY: '0' },
      gitOf,
    );
    expect(record.commit).toBe('cd'.repeat(20));
    expect(record.dirty).toBe(true);
  });
});
