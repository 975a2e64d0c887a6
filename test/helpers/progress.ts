// Waiting in tests on progress, not on the clock. CI may be a loaded 2-core machine where 10,000
// records take three times as long as on a laptop; a fixed total ("done within 60 s") fails there
// though nothing is wrong. What is wrong is a wait during which nothing moves, so the bound is on
// the time since the measure last changed, and a slow but steady run passes however long it takes.
import { setTimeout as sleep } from 'node:timers/promises';

export interface ProgressOptions<T> {
  /** What the test waits for, in its own words: the failure message starts with it. */
  what: string;
  /** True when the wait is over. */
  done: (value: T) => boolean;
  /**
   * How long the measure may stay unchanged before the wait fails. Long enough for the slowest
   * legitimate pause (a Kafka rebalance after a kill waits out a 10 s session), short enough that
   * a stuck run fails well before vitest's last-resort timeout.
   */
  stallMs?: number;
  /**
   * How long the first change may take: start-up (a child process loading a model, a consumer
   * joining its group) shows no progress on the measure. Defaults to `stallMs`.
   */
  firstProgressMs?: number;
  /** Pause between probes. */
  intervalMs?: number;
  /**
   * A reason to give up at once, without waiting out the stall bound (a child process that
   * exited), or undefined to keep waiting. Read after each probe.
   */
  abort?: () => string | undefined;
  /** More to say when the wait fails, read at that moment (a child process's log tail, say). */
  context?: () => string;
  /** Time, passed in so the helper's own tests can run on a virtual clock. */
  clock?: Clock;
}

export interface Clock {
  now: () => number;
  sleep: (ms: number) => Promise<unknown>;
}

const realClock: Clock = { now: () => performance.now(), sleep: (ms) => sleep(ms) };

export const DEFAULT_STALL_MS = 60_000;

export class ProgressStalledError extends Error {
  override readonly name = 'ProgressStalledError';
  readonly code = 'PROGRESS_STALLED';
}

/**
 * Polls `probe` until `done(value)`, and fails only when the value has not changed for
 * `stallMs` (or `firstProgressMs` before its first change). Any change counts as progress
 * (compared as JSON), so a probe may return a count, a list of counts, or offsets. A probe that
 * throws counts as no progress; its last error is in the failure message. Returns the last value.
 */
export async function waitForProgress<T>(
  probe: () => T | Promise<T>,
  options: ProgressOptions<T>,
): Promise<T> {
  const stallMs = options.stallMs ?? DEFAULT_STALL_MS;
  const firstProgressMs = options.firstProgressMs ?? stallMs;
  const intervalMs = options.intervalMs ?? 200;
  const clock = options.clock ?? realClock;
  const started = clock.now();
  let lastChange = started;
  let changes = 0;
  let seen: { value: T; key: string } | undefined;
  let lastError: unknown;

  for (;;) {
    try {
      const value = await probe();
      lastError = undefined;
      const key = JSON.stringify(value) ?? 'undefined';
      if (seen === undefined || key !== seen.key) {
        if (seen !== undefined) changes += 1;
        seen = { value, key };
        lastChange = clock.now();
      }
      if (options.done(value)) return value;
    } catch (error) {
      lastError = error;
    }
    const reason = options.abort?.();
    if (reason !== undefined)
      throw new ProgressStalledError(
        `${options.what}: ${reason}; last seen ${seen?.key ?? 'nothing'}${contextOf(options)}`,
      );
    const now = clock.now();
    const bound = changes === 0 ? firstProgressMs : stallMs;
    if (now - lastChange >= bound) throw stalled(options, { seen, lastError, changes, bound, now });
    await clock.sleep(intervalMs);
  }

  function stalled(
    opts: ProgressOptions<T>,
    state: {
      seen: { key: string } | undefined;
      lastError: unknown;
      changes: number;
      bound: number;
      now: number;
    },
  ): ProgressStalledError {
    const parts = [
      `${opts.what}: no progress for ${(state.bound / 1000).toFixed(1)} s`,
      state.changes === 0 ? ' (never advanced)' : '',
      `; last seen ${state.seen?.key ?? 'nothing'}`,
      ` after ${((state.now - started) / 1000).toFixed(1)} s and ${state.changes} changes`,
    ];
    if (state.lastError !== undefined)
      parts.push(`; the probe last failed with: ${describeError(state.lastError)}`);
    parts.push(contextOf(opts));
    return new ProgressStalledError(
      parts.join(''),
      state.lastError === undefined ? undefined : { cause: state.lastError },
    );
  }
}

function contextOf(options: { context?: () => string }): string {
  const extra = options.context?.();
  return extra === undefined || extra === '' ? '' : `\n${extra}`;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}
