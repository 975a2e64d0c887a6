// What a committed benchmark line must carry so a reader can tell what produced its numbers:
// the command, the commit (and whether the tree had uncommitted changes), the machine (CPU model,
// cores, the instruction sets the kernels pick from) and the date. Every bench script ends its
// JSON line with `run: runRecord()` (writeResultLine), and test/unit/project/readme-figures.test.ts
// reads it back from bench/results/.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { relative } from 'node:path';

/** The instruction sets that change which ONNX Runtime kernels run (docs/models.md). */
const KERNEL_ISA = ['avx2', 'fma', 'avx512f', 'avx512bw', 'avx512_vnni', 'avx_vnni', 'amx_tile'];

export interface Machine {
  cpu: string;
  cores: number;
  /** Of KERNEL_ISA, those this CPU has (from /proc/cpuinfo; empty where it cannot be read). */
  isa: string[];
  /** The GPUs nvidia-smi names, where it runs (the device machine). */
  gpu?: string;
}

export interface RunRecord {
  command: string;
  commit: string;
  /** Uncommitted changes in the tree (outside bench/results) when the line was written. */
  dirty: boolean;
  machine: Machine;
  /** ISO 8601, UTC. */
  date: string;
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return '';
  }
}

/** The CPU flags line of /proc/cpuinfo, as a set; empty off Linux. */
function cpuFlags(cpuinfo: string): Set<string> {
  const line = cpuinfo.split('\n').find((l) => l.startsWith('flags'));
  return new Set((line?.split(':')[1] ?? '').trim().split(/\s+/));
}

export function machine(cpuinfo = readCpuinfo()): Machine {
  const flags = cpuFlags(cpuinfo);
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim();
  const gpu = gpuNames();
  return {
    cpu: model ?? cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    isa: KERNEL_ISA.filter((isa) => flags.has(isa)),
    ...(gpu === '' ? {} : { gpu }),
  };
}

function gpuNames(): string {
  try {
    const out = execFileSync('nvidia-smi', ['--query-gpu=name', '--format=csv,noheader'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return out.trim().split('\n').join(', ');
  } catch {
    return '';
  }
}

function readCpuinfo(): string {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return '';
  }
}

/** The command as typed from the repository root: `node bench/throughput.ts --only int8`. */
function commandLine(argv: readonly string[]): string {
  const [, script, ...args] = argv;
  const path = script === undefined ? '' : relative(process.cwd(), script);
  return ['node', ...process.execArgv, path, ...args].join(' ');
}

/**
 * `env` and `gitOf` are the process's own unless a test passes others. The device machine gets a
 * copy of the tree without .git: there BENCH_COMMIT and BENCH_DIRTY (0 or 1), which the device
 * call's command sets, say what was copied.
 */
export function runRecord(
  argv: readonly string[] = process.argv,
  now = new Date(),
  env: NodeJS.ProcessEnv = process.env,
  gitOf: (args: string[]) => string = git,
): RunRecord {
  const status = gitOf(['status', '--porcelain', '--', '.', ':(exclude)bench/results']);
  const commit = gitOf(['rev-parse', 'HEAD']).trim();
  return {
    command: commandLine(argv),
    commit: commit || env['BENCH_COMMIT'] || 'unknown',
    dirty:
      commit === '' && env['BENCH_DIRTY'] !== undefined
        ? env['BENCH_DIRTY'] !== '0'
        : status.trim() !== '',
    machine: machine(),
    date: now.toISOString(),
  };
}

/** Writes a bench script's result as its one JSON line on stdout, with the run's record last. */
export function writeResultLine(result: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ ...result, run: runRecord() })}\n`);
}
