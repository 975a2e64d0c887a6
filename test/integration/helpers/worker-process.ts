// A stream worker as a real child process (`node src/cli/main.ts run --config <file>`), so that
// tests can SIGKILL it mid-stream or SIGTERM it and check its exit code.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const LOG_TAIL_CHARS = 1_000_000;

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves with the exit code (or the signal's name) when the process ends. */
  exited: Promise<number | string>;
  output: () => string;
  /** Why the process is gone, or undefined while it runs (an `abort` for waitForProgress). */
  gone: () => string | undefined;
}

/** Writes the config as YAML (JSON is YAML) and starts the CLI on it. */
export function startWorkerProcess(config: Record<string, unknown>): WorkerProcess {
  const dir = mkdtempSync(join(tmpdir(), 'hugot-worker-'));
  const file = join(dir, 'config.yaml');
  writeFileSync(file, JSON.stringify(config, null, 2));
  const child = spawn(
    process.execPath,
    [join(ROOT, 'src', 'cli', 'main.ts'), 'run', '--config', file],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, HUGOT_LOG_LEVEL: 'info' },
    },
  );
  let log = '';
  // The tail a test reads. Generous: a Kafka client's reconnect errors are logged with their
  // whole cause chains (~10 kB a line), and a worker that lost its broker logs one every retry
  // while it drains, which pushed the line a test looks for out of a 20 kB tail.
  const keep = (chunk: Buffer): void => {
    log = (log + chunk.toString()).slice(-LOG_TAIL_CHARS);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  let ended: number | string | undefined;
  const exited = new Promise<number | string>((resolve) =>
    child.on('exit', (code, signal) => {
      ended = code ?? signal ?? 'unknown';
      resolve(ended);
    }),
  );
  // A test that failed half-way must not leave its worker running: on a 2-core machine it would
  // slow every later test down.
  onTestFinished(() => {
    if (ended === undefined) child.kill('SIGKILL');
  });
  return {
    child,
    exited,
    output: () => log,
    gone: () => (ended === undefined ? undefined : `the worker exited (${ended})`),
  };
}
