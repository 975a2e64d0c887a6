// A Schema Registry that does not answer is weather: every request that needs it is retried with
// a jittered, growing backoff until it answers, and the records that wait for it wait (their
// partitions fill up to maxInFlightPerPartition and pause). Nothing is dead-lettered for it. The
// outage is reported once as 'degraded' (to /readyz, with the reason) and once as 'healthy' when
// a request answers again; close() (the worker stopping) ends every wait with a ClosedError.
import { ClosedError, RegistryUnavailableError } from '../errors.ts';
import type { Logger } from '../logger.ts';

/** What /readyz hears (the shape of connectors' ConnectionHealth, which this layer sits below). */
export type RegistryHealth =
  { state: 'healthy' } | { state: 'degraded'; reason: string; attempt: number; sinceMs: number };

/** The delays between attempts (connectors/backoff.ts: jittered, growing). */
export interface RetryDelays {
  next(): number;
}

export interface RegistryOutageOptions {
  logger: Logger;
  /** A fresh schedule of delays for each request that meets an outage. */
  backoff: () => RetryDelays;
  onHealth?: (health: RegistryHealth) => void;
  now?: () => number;
}

export class RegistryOutage {
  private readonly options: RegistryOutageOptions;
  private readonly closing = new AbortController();
  private outage: { since: number; attempt: number } | undefined;

  constructor(options: RegistryOutageOptions) {
    this.options = options;
  }

  /** Runs `request` until it answers (or fails for another reason); waits out outages. */
  async call<T>(request: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const backoff = this.options.backoff();
    for (;;) {
      this.check(signal);
      try {
        const answer = await request();
        this.answered();
        return answer;
      } catch (err) {
        if (!(err instanceof RegistryUnavailableError)) {
          // Any answer, even a refusal, proves the registry is up.
          this.answered();
          throw err;
        }
        this.failed(err);
        await this.sleep(backoff.next(), signal);
      }
    }
  }

  /** Ends every wait: the worker is stopping and the records are left to be read again. */
  close(): void {
    this.closing.abort();
  }

  private check(signal: AbortSignal | undefined): void {
    if (this.closing.signal.aborted)
      throw new ClosedError('the worker is stopping; the record waited for the Schema Registry');
    if (signal?.aborted === true)
      throw new ClosedError('the record was given up while it waited for the Schema Registry');
  }

  private failed(err: RegistryUnavailableError): void {
    const now = this.options.now ?? (() => performance.now());
    const first = this.outage === undefined;
    this.outage ??= { since: now(), attempt: 0 };
    this.outage.attempt += 1;
    if (first)
      this.options.logger.warn(
        { err },
        'Schema Registry unreachable: the records that need it wait, retried with backoff',
      );
    this.options.onHealth?.({
      state: 'degraded',
      reason: err.message,
      attempt: this.outage.attempt,
      sinceMs: Math.round(now() - this.outage.since),
    });
  }

  private answered(): void {
    if (this.outage === undefined) return;
    const now = this.options.now ?? (() => performance.now());
    this.options.logger.info(
      { outageMs: Math.round(now() - this.outage.since), attempts: this.outage.attempt },
      'Schema Registry answers again',
    );
    this.outage = undefined;
    this.options.onHealth?.({ state: 'healthy' });
  }

  private sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const signals = [this.closing.signal, ...(signal === undefined ? [] : [signal])];
      const done = (): void => {
        clearTimeout(timer);
        for (const s of signals) s.removeEventListener('abort', onAbort);
      };
      const onAbort = (): void => {
        done();
        try {
          this.check(signal);
        } catch (err) {
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      };
      const timer = setTimeout(() => {
        done();
        resolve();
      }, ms);
      for (const s of signals) s.addEventListener('abort', onAbort, { once: true });
    });
  }
}
