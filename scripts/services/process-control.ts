// Small helpers shared by the local Kafka, Redis and Schema Registry launchers: check that a tool
// is installed, run a build step, start a server process with its output in a log file, wait for
// it to answer, and stop it politely before forcing it.
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import {
  openSync,
  closeSync,
  readFileSync,
  writeFileSync,
  rmSync,
  existsSync,
  statSync,
} from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

export interface StartedProcess {
  pid: number;
  logFile: string;
}

export function startLogged(
  command: string,
  args: readonly string[],
  opts: { logFile: string; pidFile: string; cwd?: string; detached: boolean },
): StartedProcess {
  const fd = openSync(opts.logFile, 'a');
  const child = spawn(command, args, {
    cwd: opts.cwd,
    stdio: ['ignore', fd, fd],
    // A detached server outlives the CLI that started it; an attached one dies with the test run.
    detached: opts.detached,
  });
  closeSync(fd);
  if (child.pid === undefined) throw new Error(`could not start ${command}`);
  if (opts.detached) child.unref();
  writeFileSync(opts.pidFile, String(child.pid));
  return { pid: child.pid, logFile: opts.logFile };
}

/** Throws, naming the fix, when `tool` is not installed: before a long build, not in its middle. */
export function requireTool(tool: string, versionFlag: string, purpose: string, fix: string): void {
  try {
    execFileSync(tool, [versionFlag], { stdio: 'ignore' });
  } catch {
    throw new Error(`'${tool}' is needed ${purpose} but was not found: ${fix}`);
  }
}

/**
 * Runs a build step to its end without blocking the event loop (a test run's global setup starts
 * other services meanwhile); its output goes to the caller's stderr, where a failure is read.
 */
export function runToEnd(
  command: string,
  args: readonly string[],
  opts: { cwd: string },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd, stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Polls `probe` until it answers. With a log file, `timeoutMs` bounds the time without new log
 * output rather than the whole start-up: a JVM on a loaded 2-core machine may take minutes to
 * start while it keeps logging, and is stuck only when it falls silent.
 */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs: number; pid?: number; logFile?: string },
): Promise<void> {
  let logSize = sizeOf(opts.logFile);
  let movedAt = Date.now();
  while (Date.now() - movedAt < opts.timeoutMs) {
    if (opts.pid !== undefined && !isAlive(opts.pid)) {
      throw new Error(`${what} exited during start-up${logTail(opts.logFile)}`);
    }
    if (await probe().catch(() => false)) return;
    await sleep(250);
    const size = sizeOf(opts.logFile);
    if (size > logSize) {
      logSize = size;
      movedAt = Date.now();
    }
  }
  const bound = opts.logFile === undefined ? 'within' : 'with no new log output for';
  throw new Error(
    `${what} did not become ready ${bound} ${opts.timeoutMs} ms${logTail(opts.logFile)}`,
  );
}

/** waitUntil for a process this script started: one that never became ready is stopped. */
export async function waitOrStop(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs: number; pid: number; logFile?: string },
): Promise<void> {
  try {
    await waitUntil(what, probe, opts);
  } catch (err) {
    await stopPid(opts.pid, 5_000);
    throw err;
  }
}

function sizeOf(file: string | undefined): number {
  return file !== undefined && existsSync(file) ? statSync(file).size : 0;
}

function logTail(logFile: string | undefined): string {
  if (logFile === undefined || !existsSync(logFile)) return '';
  const lines = readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-15);
  return `; last lines of ${logFile}:\n${lines.join('\n')}`;
}

/** SIGTERM, wait for a clean exit, then SIGKILL the process group as a last resort. */
export async function stopPid(pid: number, graceMs = 30_000): Promise<void> {
  if (!isAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    if (!isAlive(pid)) return;
    await sleep(100);
  }
  process.kill(pid, 'SIGKILL');
}

export async function stopFromPidFile(pidFile: string, graceMs?: number): Promise<boolean> {
  if (!existsSync(pidFile)) return false;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  if (Number.isInteger(pid) && pid > 0) await stopPid(pid, graceMs);
  rmSync(pidFile, { force: true });
  return true;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not obtain a free port'));
      });
    });
  });
}
