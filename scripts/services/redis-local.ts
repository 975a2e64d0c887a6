// A throwaway Redis server for tests and local runs. BullMQ requires `noeviction`: an evicted
// job key is a silently lost job. CLI: node scripts/services/redis-local.ts install|start|stop
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { startLogged, waitUntil, stopPid, stopFromPidFile } from './process-control.ts';
import { defaultCacheDir } from './kafka-local.ts';

export interface LocalRedisOptions {
  port: number;
  dataDir: string;
  detached?: boolean;
  startTimeoutMs?: number;
}

export interface LocalRedis {
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

function redisServerPath(): string | undefined {
  try {
    return (
      execFileSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).trim() ||
      undefined
    );
  } catch {
    return undefined;
  }
}

/** Installs Debian's redis-server when it is missing (needs root, as on CI and dev machines). */
export function installRedis(): string {
  const existing = redisServerPath();
  if (existing !== undefined) return existing;
  if (process.getuid?.() !== 0) {
    throw new Error(
      'redis-server is not installed: run `sudo apt-get install redis-server` or set REDIS_URL',
    );
  }
  const quiet = { stdio: ['ignore', 'ignore', 'inherit'] as ('ignore' | 'inherit')[] };
  execFileSync('apt-get', ['update', '-qq'], quiet);
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'redis-server'], {
    ...quiet,
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
  const installed = redisServerPath();
  if (installed === undefined)
    throw new Error('apt-get installed redis-server but it is not on PATH');
  return installed;
}

export async function startRedis(opts: LocalRedisOptions): Promise<LocalRedis> {
  const server = installRedis();
  const dataDir = resolve(opts.dataDir);
  const pidFile = join(dataDir, 'redis.pid');
  await stopFromPidFile(pidFile);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const args = [
    '--port',
    String(opts.port),
    '--bind',
    '127.0.0.1',
    '--maxmemory-policy',
    'noeviction',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dataDir,
    '--daemonize',
    'no',
  ];
  const logFile = join(dataDir, 'redis.log');
  const proc = startLogged(server, args, { logFile, pidFile, detached: opts.detached ?? false });
  const url = `redis://127.0.0.1:${opts.port}`;
  try {
    await waitUntil('Redis server', () => pingAnswers(url), {
      timeoutMs: opts.startTimeoutMs ?? 20_000,
      pid: proc.pid,
      logFile,
    });
  } catch (err) {
    await stopPid(proc.pid, 2_000);
    throw err;
  }
  return { url, pid: proc.pid, stop: () => stopFromPidFile(pidFile).then(() => undefined) };
}

async function pingAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } finally {
    client.disconnect();
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: { port: { type: 'string', default: '16379' }, dir: { type: 'string' } },
  });
  const command = positionals[0] ?? 'help';
  const dataDir = values.dir ?? join(defaultCacheDir(), 'services', `redis-${values.port}`);
  if (command === 'install') {
    process.stdout.write(`redis-server at ${installRedis()}\n`);
  } else if (command === 'start') {
    const started = Date.now();
    const redis = await startRedis({ port: Number(values.port), dataDir, detached: true });
    process.stdout.write(
      `Redis ready in ${Date.now() - started} ms (pid ${redis.pid})\nREDIS_URL=${redis.url}\n`,
    );
  } else if (command === 'stop') {
    const stopped = await stopFromPidFile(join(dataDir, 'redis.pid'));
    process.stdout.write(stopped ? 'Redis stopped\n' : `no Redis pid file in ${dataDir}\n`);
  } else {
    process.stdout.write(
      'usage: node scripts/services/redis-local.ts install | start [--port 16379] [--dir D] | stop [--port 16379] [--dir D]\n',
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
