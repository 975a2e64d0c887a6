// How far a run has come, in the figures people read: records done of the total a finite source
// announced, the percentage, the rate and the time left. One computation for both displays: the
// terminal's progress bar (src/cli/progress-bar.ts) and the periodic stats line off a terminal.
import type { RouteCounters } from '../route/route-runner.ts';

/** A route's counters, with the records its source will hand over once it knows (a file). */
export type RouteProgress = RouteCounters & { total?: number };

export interface Progress {
  done: number;
  deadLettered: number;
  /** Records per second since the start. */
  perSecond: number;
  total?: number;
  /** 0–100, one decimal; only with a total. */
  percent?: number;
  /** Seconds left at the rate so far; only with a total and a rate. */
  etaSeconds?: number;
}

/** Finished records: written or dead-lettered (both are acknowledged, neither comes back). */
export const finishedOf = (c: RouteCounters): number => c.written + c.deadLettered;

/** The figures for a route, or for every route summed (a total only when every route has one). */
export function progressOf(routes: readonly RouteProgress[], elapsedMs: number): Progress {
  let done = 0;
  let deadLettered = 0;
  let total: number | undefined = 0;
  for (const route of routes) {
    done += finishedOf(route);
    deadLettered += route.deadLettered;
    total = route.total === undefined || total === undefined ? undefined : total + route.total;
  }
  if (routes.length === 0) total = undefined;
  const perSecond = done / Math.max(elapsedMs / 1000, 1e-3);
  const progress: Progress = { done, deadLettered, perSecond: round1(perSecond) };
  if (total === undefined) return progress;
  progress.total = total;
  progress.percent = total === 0 ? 100 : round1(Math.min((done / total) * 100, 100));
  if (perSecond > 0) progress.etaSeconds = Math.round(Math.max(total - done, 0) / perSecond);
  return progress;
}

const round1 = (n: number): number => Math.round(n * 10) / 10;
