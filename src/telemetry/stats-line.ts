// A periodic `stats` log line for processes whose standard error is not a terminal (a pod's log):
// per route the records received, written, dead-lettered and retried so far and the rate since
// the last line, and whether the worker is ready; for a finite source (a file) also the total,
// the percentage done and the seconds left. On a terminal the progress bar does this job instead
// (src/cli/progress-bar.ts).
import type { Logger } from '../logger.ts';
import type { HealthAnswer } from './health.ts';
import { finishedOf, progressOf, type RouteProgress } from './progress.ts';

export interface StatsLineOptions {
  intervalMs: number;
  logger: Logger;
  counters: () => Record<string, RouteProgress>;
  readiness: () => HealthAnswer;
  now?: () => number;
}

/** Starts the line's timer; returns the function that stops it. */
export function startStatsLine(options: StatsLineOptions): () => void {
  if (options.intervalMs <= 0) return () => undefined;
  const line = statsLine(options);
  const timer = setInterval(line, options.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

interface RouteRate {
  /** Since the last line. */
  perSecond: number;
  percent?: number;
  /** At the rate since the start. */
  etaSeconds?: number;
}

/** One line per call (what the timer calls; tests call it directly). */
export function statsLine(options: StatsLineOptions): () => void {
  const now = options.now ?? (() => performance.now());
  const started = now();
  let last = { at: started, done: new Map<string, number>() };
  return () => {
    const at = now();
    const seconds = Math.max((at - last.at) / 1000, 1e-3);
    const done = new Map<string, number>();
    const routes: Record<string, RouteProgress & RouteRate> = {};
    for (const [route, c] of Object.entries(options.counters())) {
      const finished = finishedOf(c);
      done.set(route, finished);
      const before = last.done.get(route) ?? 0;
      const { percent, etaSeconds } = progressOf([c], at - started);
      routes[route] = {
        ...c,
        perSecond: Math.round(((finished - before) / seconds) * 10) / 10,
        ...(percent !== undefined ? { percent } : {}),
        ...(etaSeconds !== undefined ? { etaSeconds } : {}),
      };
    }
    last = { at, done };
    const ready = options.readiness();
    options.logger.info(
      { stats: { routes, ready: ready.ok, ...(ready.ok ? {} : { notReady: ready.reasons }) } },
      'stats',
    );
  };
}
