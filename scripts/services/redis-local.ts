// A throwaway Redis server for tests and local runs. BullMQ requires `noeviction`: an evicted
// job key is a silently lost job. CLI: node scripts/services/redis-local.ts install|start|stop
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis, type RedisOptions } from 'ioredis';
import { startLogged, waitUntil, stopPid, stopFromPidFile } from './process-control.ts';
import { defaultCacheDir } from './kafka-local.ts';
import { makeCertificates, type LocalCertificates } from './tls-certificates.ts';

export interface LocalRedisOptions {
  port: number;
  dataDir: string;
  detached?: boolean;
  startTimeoutMs?: number;
  /**
   * TLS only (no plaintext port) on `port`, and ACL users instead of the open `default` user.
   * Certificates are made in `certificatesDir` (kept across restarts, unlike dataDir).
   */
  secure?: { certificatesDir: string; user?: RedisUser };
  /**
   * Keep what was written across a stop and start (the chaos suite restarts Redis mid-run): an
   * append-only file fsynced on every write, and dataDir kept instead of wiped at start.
   */
  persistent?: boolean;
}

export interface RedisUser {
  name: string;
  password: string;
}

export const DEFAULT_REDIS_USER: RedisUser = { name: 'hugot', password: 'hugot-local-secret-1' };

export interface LocalRedis {
  url: string;
  pid: number;
  stop: () => Promise<void>;
  /** Set for a secure server: its certificates and the ACL user that may connect. */
  certificates?: LocalCertificates;
  user?: RedisUser;
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
  if (opts.persistent !== true) rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(dataDir, { recursive: true });
  const certificates =
    opts.secure === undefined ? undefined : makeCertificates(opts.secure.certificatesDir);
  const user = opts.secure === undefined ? undefined : (opts.secure.user ?? DEFAULT_REDIS_USER);
  const args = [
    ...(certificates === undefined || user === undefined
      ? ['--port', String(opts.port)]
      : secureArgs(opts.port, certificates, user)),
    '--bind',
    '127.0.0.1',
    '--maxmemory-policy',
    'noeviction',
    '--save',
    '',
    '--appendonly',
    opts.persistent === true ? 'yes' : 'no',
    ...(opts.persistent === true ? ['--appendfsync', 'always'] : []),
    '--dir',
    dataDir,
    '--daemonize',
    'no',
  ];
  const logFile = join(dataDir, 'redis.log');
  const proc = startLogged(server, args, { logFile, pidFile, detached: opts.detached ?? false });
  const url = `${certificates === undefined ? 'redis' : 'rediss'}://127.0.0.1:${opts.port}`;
  const probe: RedisOptions =
    certificates === undefined || user === undefined
      ? {}
      : {
          tls: { ca: readFileSync(certificates.caFile) },
          username: user.name,
          password: user.password,
        };
  try {
    await waitUntil('Redis server', () => pingAnswers(url, probe), {
      timeoutMs: opts.startTimeoutMs ?? 20_000,
      pid: proc.pid,
      logFile,
    });
  } catch (err) {
    await stopPid(proc.pid, 2_000);
    throw err;
  }
  return {
    url,
    pid: proc.pid,
    stop: () => stopFromPidFile(pidFile).then(() => undefined),
    ...(certificates !== undefined && user !== undefined ? { certificates, user } : {}),
  };
}

/** TLS on the port (client certificates accepted, not required); the default user disabled. */
function secureArgs(port: number, certificates: LocalCertificates, user: RedisUser): string[] {
  return [
    '--port',
    '0',
    '--tls-port',
    String(port),
    '--tls-cert-file',
    certificates.serverCertFile,
    '--tls-key-file',
    certificates.serverKeyFile,
    '--tls-ca-cert-file',
    certificates.caFile,
    '--tls-auth-clients',
    'optional',
    '--user',
    'default',
    'off',
    '--user',
    user.name,
    'on',
    `>${user.password}`,
    '~*',
    '&*',
    '+@all',
  ];
}

async function pingAnswers(url: string, options: RedisOptions): Promise<boolean> {
  const client = new Redis(url, {
    ...options,
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
    options: {
      port: { type: 'string', default: '16379' },
      dir: { type: 'string' },
      secure: { type: 'boolean', default: false },
    },
  });
  const command = positionals[0] ?? 'help';
  const dataDir = values.dir ?? join(defaultCacheDir(), 'services', `redis-${values.port}`);
  if (command === 'install') {
    process.stdout.write(`redis-server at ${installRedis()}\n`);
  } else if (command === 'start') {
    const started = Date.now();
    const redis = await startRedis({
      port: Number(values.port),
      dataDir,
      detached: true,
      ...(values.secure ? { secure: { certificatesDir: `${dataDir}-tls` } } : {}),
    });
    process.stdout.write(
      `Redis ready in ${Date.now() - started} ms (pid ${redis.pid})\nREDIS_URL=${redis.url}\n`,
    );
    if (redis.certificates !== undefined && redis.user !== undefined) {
      // A local test server's throwaway credentials: printed so that a developer can connect.
      process.stdout.write(
        `TLS only; CA file: ${redis.certificates.caFile}\n` +
          `ACL user: ${redis.user.name}  password: ${redis.user.password} (the default user is off)\n`,
      );
    }
  } else if (command === 'stop') {
    const stopped = await stopFromPidFile(join(dataDir, 'redis.pid'));
    process.stdout.write(stopped ? 'Redis stopped\n' : `no Redis pid file in ${dataDir}\n`);
  } else {
    process.stdout.write(
      'usage: node scripts/services/redis-local.ts install | start [--port 16379] [--dir D] [--secure] | stop [--port 16379] [--dir D]\n',
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
