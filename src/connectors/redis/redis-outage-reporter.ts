// Turns an ioredis connection's reconnects into source health reports (SourceDeps.onHealth).
// Connections are opened with maxRetriesPerRequest: null, so during an outage commands wait
// instead of failing and the outage shows only as reconnect events: `degraded` from the first
// one (with the attempt number and how long it has lasted), `healthy` once the connection is
// ready again. An outage longer than telemetry.health.sourceOutageMs then counts as failed.
import type { Redis } from 'ioredis';
import type { ConnectionHealth } from '../connection-health.ts';

export interface RedisOutageReporterOptions {
  /** What is unreachable, in the report's words (e.g. "Redis unreachable (queue q)"). */
  reason: string;
  onHealth: ((health: ConnectionHealth) => void) | undefined;
  /** A reconnect while the source stops is its own doing, not an outage. */
  stopping: () => boolean;
  now?: () => number;
}

/** Listens on `connection`; returns the function that stops listening. */
export function reportRedisOutages(
  connection: Redis,
  options: RedisOutageReporterOptions,
): () => void {
  const now = options.now ?? (() => performance.now());
  let down: { since: number; attempt: number } | undefined;
  const reconnecting = (): void => {
    if (options.stopping()) return;
    down ??= { since: now(), attempt: 0 };
    down.attempt += 1;
    options.onHealth?.({
      state: 'degraded',
      reason: options.reason,
      attempt: down.attempt,
      sinceMs: Math.round(now() - down.since),
    });
  };
  const ready = (): void => {
    if (down === undefined) return;
    down = undefined;
    options.onHealth?.({ state: 'healthy' });
  };
  connection.on('reconnecting', reconnecting);
  connection.on('ready', ready);
  return () => {
    connection.off('reconnecting', reconnecting);
    connection.off('ready', ready);
  };
}
