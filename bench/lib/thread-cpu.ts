// CPU time per kind of thread of this process, read from /proc (Linux): the main thread, the
// inference threads (WorkerThread), libuv's pool (where the tokenizer's async encodes run), V8's
// helpers (garbage collection) and the rest. It says where a record's CPU goes, not only how much.
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICK_MS = 10;

/** Milliseconds of CPU so far per thread kind; empty where /proc is not there. */
export function cpuByThreadKind(): Map<string, number> {
  const kinds = new Map<string, number>();
  let tasks: string[];
  try {
    tasks = readdirSync('/proc/self/task');
  } catch {
    return kinds;
  }
  for (const tid of tasks) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    // Kind: the thread's name without its number ('libuv-worker', 'V8Worker', 'WorkerThread').
    const kind = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')).replace(/\d+$/, '#');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(fields[11]) + Number(fields[12])) * CLOCK_TICK_MS;
    kinds.set(kind, (kinds.get(kind) ?? 0) + ms);
  }
  return kinds;
}

/** Adds the CPU each thread kind spent since `before` into `totals`. */
export function addCpuSince(totals: Map<string, number>, before: Map<string, number>): void {
  for (const [kind, ms] of cpuByThreadKind())
    totals.set(kind, (totals.get(kind) ?? 0) + ms - (before.get(kind) ?? 0));
}

/** Per-record CPU milliseconds by thread kind (kinds under 0.01 left out), largest first. */
export function cpuPerRecord(totals: Map<string, number>, records: number): Record<string, number> {
  const out: [string, number][] = [];
  for (const [kind, ms] of totals) {
    const per = ms / records;
    if (per >= 0.01) out.push([kind, Math.round(per * 1000) / 1000]);
  }
  return Object.fromEntries(out.sort((a, b) => b[1] - a[1]));
}
