// Every outage a source reports, logged where it starts and where it ends: one warning when a
// route's source first degrades (a broker or Redis gone, reconnecting), one line when it reads
// again with how long it lasted and how many reconnects it took. The reconnect attempts between
// stay out of the log; /readyz and hugot_source_up say the state meanwhile.
import type { SourceHealth } from '../connectors/source.ts';
import type { Logger } from '../logger.ts';

export interface OutageLogOptions {
  logger: Logger;
  /** Hears an outage's start (counted in metrics). */
  onOutage?: (route: string) => void;
  now?: () => number;
}

export function outageLog(
  options: OutageLogOptions,
): (route: string, health: SourceHealth) => void {
  const now = options.now ?? (() => performance.now());
  const down = new Map<string, { since: number; attempts: number; reason: string }>();
  return (route, health) => {
    const outage = down.get(route);
    if (health.state === 'degraded') {
      if (outage !== undefined) {
        outage.attempts = health.attempt;
        return;
      }
      down.set(route, {
        since: now() - health.sinceMs,
        attempts: health.attempt,
        reason: health.reason,
      });
      options.onOutage?.(route);
      options.logger.warn(
        { route, reason: health.reason },
        `route ${route}: outage began: ${health.reason}; reconnecting with backoff (not ready meanwhile)`,
      );
      return;
    }
    if (outage === undefined) return;
    down.delete(route);
    const lastedMs = Math.round(now() - outage.since);
    if (health.state === 'healthy')
      options.logger.info(
        { route, lastedMs, attempts: outage.attempts, reason: outage.reason },
        `route ${route}: outage over after ${lastedMs} ms (${outage.attempts} reconnect attempts)`,
      );
  };
}
