// Redis connections for the BullMQ and Redis Streams ends of a route. Each end owns its
// connections and quits them on close, so one route's shutdown never cuts another's.
import { Redis } from 'ioredis';
import type { WorkerConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';

export function redisUrlOf(config: WorkerConfig, field: string): string {
  const url = config.connections.redis?.url;
  if (url === undefined) {
    throw new ConfigError(
      `${field} uses Redis, but connections.redis is missing; add connections.redis.url`,
      {
        field: 'connections.redis',
      },
    );
  }
  return url;
}

/**
 * A fresh connection. `maxRetriesPerRequest: null` is what BullMQ requires (its blocking calls
 * must wait out a reconnect rather than fail); the Streams ends use it too, so that a Redis
 * restart stalls them instead of turning in-flight acknowledgements into errors.
 */
export function connectRedis(
  url: string,
  name: string,
  options: { autoPipelining?: boolean } = {},
): Redis {
  // Auto-pipelining sends the commands of one event-loop turn (many records' XADD or XACK) as
  // one round trip.
  return new Redis(url, {
    maxRetriesPerRequest: null,
    connectionName: name,
    enableAutoPipelining: options.autoPipelining ?? false,
  });
}

/** Quits politely; a connection that is already gone is closed without waiting. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
