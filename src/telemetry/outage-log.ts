// Every outage a source or sink reports, logged where it starts and where it ends: one warning
// when a route's end first degrades (a broker or Redis gone, reconnecting), one line when it
// works again with how long it lasted and how many reconnects it took. The reconnect attempts
// between stay out of the log; /readyz, hugot_source_up and hugot_sink_up say the state meanwhile.
import type { ConnectionHealth } from '../connectors/connection-health.ts';
import type { Logger } from '../logger.ts';

/** Which end of a route: its source, its output sink, its dead-letter sink. */
export type RouteEnd = 'source' | 'sink' | 'dlq';

export interface OutageLogOptions {
  logger: Logger;
  /** Hears an outage's start (counted in metrics). */
  onOutage?: (route: string, end: RouteEnd) => void;
  now?: () => number;
}

export type OutageLog = (route: string, end: RouteEnd, health: ConnectionHealth) => void;

export function outageLog(options: OutageLogOptions): OutageLog {
  const now = options.now ?? (() => performance.now());
  const down = new Map<string, { since: number; attempts: number; reason: string }>();
  return (route, end, health) => {
    const key = `${end}\u0000${route}`;
    // The source is what a route is known by; its sinks are named.
    const where = end === 'source' ? `route ${route}` : `route ${route} ${end}`;
    const outage = down.get(key);
    if (health.state === 'degraded') {
      if (outage !== undefined) {
        outage.attempts = health.attempt;
        return;
      }
      down.set(key, {
        since: now() - health.sinceMs,
        attempts: health.attempt,
        reason: health.reason,
      });
      options.onOutage?.(route, end);
      options.logger.warn(
        { route, end, reason: health.reason },
        `${where}: outage began: ${health.reason}; reconnecting with backoff (not ready meanwhile)`,
      );
      return;
    }
    if (outage === undefined) return;
    down.delete(key);
    const lastedMs = Math.round(now() - outage.since);
    if (health.state === 'healthy')
      options.logger.info(
        { route, end, lastedMs, attempts: outage.attempts, reason: outage.reason },
        `${where}: outage over after ${lastedMs} ms (${outage.attempts} reconnect attempts)`,
      );
  };
}
