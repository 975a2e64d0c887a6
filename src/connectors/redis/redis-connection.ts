// Redis connections for the BullMQ and Redis Streams ends of a route. Each end owns its
// connections and quits them on close, so one route's shutdown never cuts another's.
import { Redis, type RedisOptions } from 'ioredis';
import type { RedisConnectionConfig } from '../../config/connection-schema.ts';
import { readSecret, readTls, secretSpec, type Environment } from '../../config/secrets.ts';
import { ConfigError, ConnectionError } from '../../errors.ts';
import { redactText } from '../../redaction.ts';

const AT = 'connections.redis';

/** Where a Redis end connects, and how it proves who it is (credentials and TLS resolved). */
export interface RedisTarget {
  url: string;
  options: RedisOptions;
}

/** connections.redis with its secrets and TLS files read (Connections does it once per worker). */
export function redisTargetOf(redis: RedisConnectionConfig, env: Environment): RedisTarget {
  const options: RedisOptions = {};
  const username = readSecret(secretSpec(redis, 'username'), AT, 'username', env);
  const password = readSecret(secretSpec(redis, 'password'), AT, 'password', env);
  if (username !== undefined && password === undefined) {
    throw new ConfigError(
      `${AT}.username is set without a password; add password, passwordEnv or passwordFile`,
      { field: `${AT}.password` },
    );
  }
  if (username !== undefined) options.username = username;
  if (password !== undefined) options.password = password;
  if (redis.tls !== undefined) {
    const { checkHostname, ...tls } = readTls(redis.tls, `${AT}.tls`, env);
    options.tls = { ...tls, ...(checkHostname ? {} : { checkServerIdentity: () => undefined }) };
  }
  return { url: redis.url, options };
}

/**
 * A fresh connection. `maxRetriesPerRequest: null` is what BullMQ requires (its blocking calls
 * must wait out a reconnect rather than fail); the Streams ends use it too, so that a Redis
 * restart stalls them instead of turning in-flight acknowledgements into errors.
 */
export function connectRedis(
  target: RedisTarget,
  name: string,
  options: { autoPipelining?: boolean } = {},
): Redis {
  // Auto-pipelining sends the commands of one event-loop turn (many records' XADD or XACK) as
  // one round trip.
  const client = new Redis(target.url, {
    ...target.options,
    maxRetriesPerRequest: null,
    connectionName: name,
    enableAutoPipelining: options.autoPipelining ?? false,
  });
  // Without a listener ioredis writes every connection error of an outage to the console, past
  // the logger and its redaction. Outages reach the health state through the reconnect events
  // (redis-outage-reporter.ts), and fatal refusals through redisReady.
  client.on('error', () => undefined);
  return client;
}

/**
 * ioredis's rejection of a command that was sent in a pipeline (auto-pipelining included) and left
 * unanswered when its connection closed after Redis had answered an earlier part of it: the
 * command may or may not have run.
 */
export function isAbortedByClose(err: unknown): boolean {
  return (
    err instanceof Error &&
    err.name === 'AbortError' &&
    err.message === 'Command aborted due to connection close'
  );
}

/** Refusals that a reconnect cannot fix: credentials, ACL rights, certificates, TLS mismatch. */
const FATAL_REPLY = /^(WRONGPASS|NOAUTH|NOPERM)|invalid (username-)?password|ERR AUTH/i;
const FATAL_TLS_CODE =
  /^(CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_TLS_|ERR_SSL_|ERR_OSSL_)/;

export function isFatalRedisError(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  return FATAL_REPLY.test(err.message) || (typeof code === 'string' && FATAL_TLS_CODE.test(code));
}

/**
 * Resolves once the connection is ready. A refusal that retrying cannot fix rejects with a
 * ConnectionError naming connections.redis (and stops the client's reconnect loop); a server
 * that is merely down is waited for, as a restart would be.
 */
export function redisReady(client: Redis, url: string): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = (): void => {
      client.off('ready', onReady);
      client.off('error', onError);
    };
    const onReady = (): void => {
      done();
      resolve();
    };
    const onError = (err: unknown): void => {
      if (!isFatalRedisError(err)) return;
      done();
      client.disconnect();
      reject(connectionErrorOf(err, url));
    };
    client.on('ready', onReady);
    client.on('error', onError);
  });
}

/** The ConnectionError for a refusal no reconnect can fix, naming connections.redis and the fix. */
export function connectionErrorOf(err: unknown, url: string): ConnectionError {
  const message = redactText(err instanceof Error ? err.message : String(err));
  const where = redactText(url);
  const fix = FATAL_REPLY.test(message)
    ? `check ${AT}.username and password (passwordEnv / passwordFile) and the user's ACL rights`
    : `check ${AT}.tls (caFile, certFile/keyFile, servername) and that the URL is rediss:// for a TLS port`;
  // The cause keeps the class and message only: the original's `command.args` may hold the password.
  const cause = new Error(message);
  cause.name = err instanceof Error ? err.name : 'Error';
  return new ConnectionError(
    `${AT}: Redis at ${where} refused the connection: ${message}; ${fix}`,
    {
      field: AT,
      cause,
    },
  );
}

/** Quits politely; a connection that is already gone is closed without waiting. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status !== 'ready') {
    // quit() would wait in the offline queue for a connection that may never come.
    client.disconnect();
    return;
  }
  try {
    await client.quit();
  } catch {
    client.disconnect();
  }
}
