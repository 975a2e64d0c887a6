// Start-up waits for what is merely absent: a broker or Redis that is not up yet, a topic not yet
// created. Each is asked with jittered backoff until it answers or startup.timeoutMs passes; every
// change in what is missing is logged once, with the route, and /readyz says it meanwhile. A stop
// signal ends the wait at once. Configuration that can never work is refused before this
// (ConfigError, exit 2); a wait that runs out is a dependency failed for good (exit 1).
import { Backoff } from '../connectors/backoff.ts';
import { ConfigError, ConnectionError, StartupTimeoutError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** Something a worker needs before it starts: answers what is missing (nothing: ready). */
export interface Dependency {
  /** `kafka 127.0.0.1:9092`, `redis`: what the log names. */
  readonly name: string;
  /** What is missing, one line each; an empty list when everything is there. Rejects: unreachable. */
  missing(): Promise<string[]>;
}

export interface StartupWaitOptions {
  logger: Logger;
  timeoutMs: number;
  /** Aborted by a stop signal: the wait resolves `'stopped'` at once. */
  signal: AbortSignal;
  /** What is missing now (an empty list once everything answered): /readyz's reasons. */
  onWaiting?: (missing: string[]) => void;
  backoff?: Backoff;
  now?: () => number;
}

/** Resolves 'ready' once no dependency misses anything, 'stopped' on the signal. */
export async function waitForDependencies(
  dependencies: readonly Dependency[],
  options: StartupWaitOptions,
): Promise<'ready' | 'stopped'> {
  const { logger, timeoutMs, signal } = options;
  const now = options.now ?? (() => performance.now());
  const backoff = options.backoff ?? new Backoff({ initialMs: 500, maxMs: 10_000 });
  const started = now();
  let logged = '';
  for (;;) {
    if (signal.aborted) return 'stopped';
    const missing = (
      await Promise.all(
        dependencies.map((d) =>
          d.missing().catch((err: unknown) => {
            if (isFatal(err)) throw err;
            return [
              `${d.name} does not answer: ${err instanceof Error ? err.message : String(err)}`,
            ];
          }),
        ),
      )
    ).flat();
    options.onWaiting?.(missing);
    const waited = Math.round(now() - started);
    if (missing.length === 0) {
      if (logged !== '') logger.info({ waitedMs: waited }, 'start-up: everything needed answers');
      return 'ready';
    }
    const state = missing.join('\n');
    if (state !== logged) {
      logger.warn(
        { missing, waitedMs: waited, timeoutMs },
        `start-up: waiting for ${missing.join('; ')}`,
      );
      logged = state;
    }
    if (waited >= timeoutMs)
      throw new StartupTimeoutError(
        `start-up waited ${waited} ms (startup.timeoutMs ${timeoutMs}) and still misses: ${missing.join('; ')}`,
      );
    const delay = Math.min(backoff.next(), Math.max(timeoutMs - waited, 0));
    if (await sleepUnlessAborted(delay, signal)) return 'stopped';
  }
}

/** Refusals a wait cannot cure (credentials, certificates) end it at once: they need a config change. */
const isFatal = (err: unknown): boolean =>
  err instanceof ConfigError || err instanceof ConnectionError;

/** true when the signal cut the sleep short. */
function sleepUnlessAborted(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(false);
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(true);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
