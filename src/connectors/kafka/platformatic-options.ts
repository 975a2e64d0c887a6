// The options every @platformatic/kafka client of one worker shares: brokers, client id, TLS and
// SASL (already read by kafka-security.ts, in kafkajs' shape, and translated here), timeouts.
import type { BaseOptions, SASLOptions } from '@platformatic/kafka';
import type { KafkaSecurity } from './kafka-security.ts';

export type PlatformaticClientOptions = BaseOptions;

export interface PlatformaticClientSettings {
  brokers: string[];
  clientId: string;
  security?: KafkaSecurity;
  connectionTimeoutMs?: number;
}

/**
 * Retries are the driver's and the source's business (jittered backoff, a rewind, a restart):
 * the client retries a request a few times with a short delay, so an outage is reported soon.
 */
export function platformaticClientOptions(settings: PlatformaticClientSettings): BaseOptions {
  const sasl = settings.security?.sasl;
  return {
    clientId: settings.clientId,
    bootstrapBrokers: settings.brokers,
    retries: 3,
    retryDelay: 250,
    ...(settings.security?.ssl !== undefined ? { tls: settings.security.ssl } : {}),
    ...(sasl !== undefined ? { sasl: saslOf(sasl) } : {}),
    ...(settings.connectionTimeoutMs !== undefined
      ? { connectTimeout: settings.connectionTimeoutMs }
      : {}),
  };
}

function saslOf(sasl: NonNullable<KafkaSecurity['sasl']>): SASLOptions {
  if (sasl.mechanism === 'oauthbearer') {
    const provider = sasl.oauthBearerProvider;
    return { mechanism: 'OAUTHBEARER', token: async () => (await provider()).value };
  }
  if (sasl.mechanism === 'plain')
    return { mechanism: 'PLAIN', username: sasl.username, password: sasl.password };
  if (sasl.mechanism === 'scram-sha-256')
    return { mechanism: 'SCRAM-SHA-256', username: sasl.username, password: sasl.password };
  if (sasl.mechanism === 'scram-sha-512')
    return { mechanism: 'SCRAM-SHA-512', username: sasl.username, password: sasl.password };
  throw new Error(`SASL mechanism ${sasl.mechanism} is not supported by @platformatic/kafka`);
}
