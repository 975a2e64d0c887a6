// A throwaway Prometheus server that scrapes a local worker's telemetry port, for the metrics
// integration test and for looking at a local run. Debian's `prometheus` package provides the
// binary. CLI: node scripts/services/prometheus-local.ts install|start|stop
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultCacheDir } from './kafka-local.ts';
import { startLogged, waitUntil, stopPid, stopFromPidFile, freePort } from './process-control.ts';

export interface LocalPrometheusOptions {
  /** Where the server listens; a free port when absent. */
  port?: number;
  /** host:port of each worker's telemetry server (scraped at /metrics). */
  targets: string[];
  dataDir: string;
  /**
   * Short by default: a test reads back what the worker did seconds ago, and a 15 s scrape (the
   * usual) would make it wait for nothing.
   */
  scrapeIntervalMs?: number;
  detached?: boolean;
  startTimeoutMs?: number;
}

export interface LocalPrometheus {
  /** http://127.0.0.1:<port>, the base of /api/v1/query. */
  url: string;
  pid: number;
  stop: () => Promise<void>;
}

function prometheusPath(): string | undefined {
  try {
    return (
      execFileSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

/** Installs Debian's prometheus when it is missing (needs root, as on CI and dev machines). */
export function installPrometheus(): string {
  const existing = prometheusPath();
  if (existing !== undefined) return existing;
  if (process.getuid?.() !== 0) {
    throw new Error('prometheus is not installed: run `sudo apt-get install prometheus`');
  }
  const quiet = { stdio: ['ignore', 'ignore', 'inherit'] as ('ignore' | 'inherit')[] };
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  execFileSync('apt-get', ['update', '-qq'], quiet);
  // Without recommends: the exporters and the alertmanager are not needed to scrape a worker.
  execFileSync('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'prometheus'], {
    ...quiet,
    env,
  });
  const installed = prometheusPath();
  if (installed === undefined)
    throw new Error('apt-get installed prometheus but it is not on PATH');
  return installed;
}

/** The scrape configuration (YAML is JSON's superset, so JSON is written). */
export function scrapeConfig(targets: string[], scrapeIntervalMs: number): string {
  const interval = `${Math.max(1, Math.round(scrapeIntervalMs))}ms`;
  return JSON.stringify(
    {
      global: { scrape_interval: interval, evaluation_interval: interval },
      scrape_configs: [
        {
          job_name: 'hugot-stream',
          scrape_interval: interval,
          scrape_timeout: interval,
          metrics_path: '/metrics',
          static_configs: [{ targets }],
        },
      ],
    },
    null,
    2,
  );
}

export async function startPrometheus(opts: LocalPrometheusOptions): Promise<LocalPrometheus> {
  const binary = installPrometheus();
  const dataDir = resolve(opts.dataDir);
  const pidFile = join(dataDir, 'prometheus.pid');
  await stopFromPidFile(pidFile);
  rmSync(dataDir, { recursive: true, force: true });
  mkdirSync(join(dataDir, 'tsdb'), { recursive: true });
  const configFile = join(dataDir, 'prometheus.yml');
  writeFileSync(configFile, scrapeConfig(opts.targets, opts.scrapeIntervalMs ?? 1_000));
  const port = opts.port ?? (await freePort());
  const logFile = join(dataDir, 'prometheus.log');
  const proc = startLogged(
    binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dataDir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      // The Debian build defaults to its packaged console templates under /etc; not needed here.
      '--storage.tsdb.retention.time=1d',
    ],
    { logFile, pidFile, detached: opts.detached ?? false },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitUntil('Prometheus', () => answers(`${url}/-/ready`), {
      timeoutMs: opts.startTimeoutMs ?? 30_000,
      pid: proc.pid,
      logFile,
    });
  } catch (err) {
    await stopPid(proc.pid, 2_000);
    throw err;
  }
  return { url, pid: proc.pid, stop: () => stopFromPidFile(pidFile).then(() => undefined) };
}

async function answers(url: string): Promise<boolean> {
  const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  await response.body?.cancel();
  return response.ok;
}

export interface InstantSample {
  labels: Record<string, string>;
  value: number;
}

/** An instant query through the HTTP API (/api/v1/query); a vector result as numbers. */
export async function queryPrometheus(baseUrl: string, query: string): Promise<InstantSample[]> {
  const response = await fetch(`${baseUrl}/api/v1/query?query=${encodeURIComponent(query)}`, {
    signal: AbortSignal.timeout(10_000),
  });
  const body = (await response.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: { metric: Record<string, string>; value: unknown[] }[] };
  };
  if (body.status !== 'success' || body.data === undefined) {
    throw new Error(`Prometheus query ${query} failed: ${body.error ?? response.statusText}`);
  }
  if (body.data.resultType !== 'vector') {
    throw new Error(`Prometheus query ${query} gave a ${body.data.resultType}, not a vector`);
  }
  return body.data.result.map((r) => ({ labels: r.metric, value: Number(r.value[1]) }));
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '19590' },
      target: { type: 'string', multiple: true },
      dir: { type: 'string' },
      'scrape-interval-ms': { type: 'string', default: '1000' },
    },
  });
  const command = positionals[0] ?? 'help';
  const dataDir = values.dir ?? join(defaultCacheDir(), 'services', `prometheus-${values.port}`);
  if (command === 'install') {
    process.stdout.write(`prometheus at ${installPrometheus()}\n`);
  } else if (command === 'start') {
    const started = Date.now();
    const targets = values.target ?? ['127.0.0.1:9464'];
    const prometheus = await startPrometheus({
      port: Number(values.port),
      targets,
      dataDir,
      scrapeIntervalMs: Number(values['scrape-interval-ms']),
      detached: true,
    });
    process.stdout.write(
      `Prometheus ready in ${Date.now() - started} ms (pid ${prometheus.pid}), ` +
        `scraping ${targets.join(', ')}\nPROMETHEUS_URL=${prometheus.url}\n`,
    );
  } else if (command === 'stop') {
    const stopped = await stopFromPidFile(join(dataDir, 'prometheus.pid'));
    process.stdout.write(
      stopped ? 'Prometheus stopped\n' : `no Prometheus pid file in ${dataDir}\n`,
    );
  } else {
    process.stdout.write(
      'usage: node scripts/services/prometheus-local.ts install | start [--port 19590] [--target host:port]... [--scrape-interval-ms 1000] [--dir D] | stop [--port 19590] [--dir D]\n',
    );
  }
}

if (import.meta.main) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
