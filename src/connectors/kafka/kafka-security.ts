// connections.kafka.tls / .sasl -> the `ssl` and `sasl` options of a kafkajs client. Files and
// environment variables are read here, once; an OAUTHBEARER tokenFile is read again at every
// authentication, so a sidecar that refreshes the file refreshes the worker's token.
import { readFile } from 'node:fs/promises';
import type { ConnectionOptions } from 'node:tls';
import type { SASLOptions } from 'kafkajs';
import type { KafkaConnectionConfig, SaslConfig } from '../../config/connection-schema.ts';
import { readSecret, readTls, secretSpec, type Environment } from '../../config/secrets.ts';
import { ConfigError, ConnectionError } from '../../errors.ts';

const AT = 'connections.kafka';

export interface KafkaSecurity {
  ssl?: ConnectionOptions;
  sasl?: SASLOptions;
}

export function kafkaSecurityOf(kafka: KafkaConnectionConfig, env: Environment): KafkaSecurity {
  const security: KafkaSecurity = {};
  if (kafka.tls !== undefined) {
    const { checkHostname, ...tls } = readTls(kafka.tls, `${AT}.tls`, env);
    security.ssl = {
      ...tls,
      // Node checks the name by default; turning it off keeps the chain check.
      ...(checkHostname ? {} : { checkServerIdentity: () => undefined }),
    };
  }
  if (kafka.sasl !== undefined) security.sasl = saslOf(kafka.sasl, env);
  return security;
}

function saslOf(sasl: SaslConfig, env: Environment): SASLOptions {
  const at = `${AT}.sasl`;
  const secret = (key: string): string | undefined =>
    readSecret(secretSpec(sasl, key), at, key, env);
  if (sasl.mechanism === 'oauthbearer') {
    for (const key of ['username', 'password']) {
      if (secret(key) !== undefined)
        throw new ConfigError(
          `${at}.${key}: OAUTHBEARER authenticates with a token; use token, tokenEnv or tokenFile instead`,
          { field: `${at}.${key}` },
        );
    }
    const first = secret('token');
    if (first === undefined) {
      throw new ConfigError(
        `${at}: mechanism oauthbearer needs a token; set tokenFile (re-read at each authentication) or tokenEnv`,
        { field: `${at}.token` },
      );
    }
    const file = sasl.tokenFile;
    return {
      mechanism: 'oauthbearer',
      oauthBearerProvider: async () => ({
        value: file === undefined ? first : (await readFile(file, 'utf8')).trim(),
      }),
    };
  }
  if (secret('token') !== undefined) {
    throw new ConfigError(
      `${at}.token is for mechanism oauthbearer; ${sasl.mechanism} needs username and password`,
      { field: `${at}.token` },
    );
  }
  const username = secret('username');
  const password = secret('password');
  if (username === undefined || password === undefined) {
    const missing = username === undefined ? 'username' : 'password';
    throw new ConfigError(
      `${at}.${missing} is missing: ${sasl.mechanism} needs a username and a password (${missing}, ${missing}Env or ${missing}File)`,
      { field: `${at}.${missing}` },
    );
  }
  return { mechanism: sasl.mechanism, username, password };
}

const TLS_CODE =
  /^(CERT_|UNABLE_TO_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|ERR_TLS_|ERR_SSL_|ERR_OSSL_)/;

/**
 * A refusal that retrying cannot fix (wrong SASL credentials, a certificate that does not
 * verify) as a ConnectionError that names connections.kafka and the fields to check; any other
 * error as it was. Both clients wrap the first failure (kafkajs in retry errors, @platformatic/kafka
 * in aggregate errors), so causes and aggregated errors are searched.
 */
export function kafkaConnectError(err: unknown, kafka: KafkaConnectionConfig | undefined): Error {
  if (kafka === undefined) return err instanceof Error ? err : new Error(String(err));
  const brokers = kafka.brokers.join(',');
  for (const e of errorChain(err)) {
    const code = (e as { code?: unknown }).code;
    if (
      e.name === 'KafkaJSSASLAuthenticationError' ||
      code === 'PLT_KFK_AUTHENTICATION' ||
      (e as { apiId?: unknown }).apiId === 'SASL_AUTHENTICATION_FAILED'
    ) {
      const mechanism = kafka.sasl?.mechanism ?? 'none';
      return new ConnectionError(
        `${AT}: the brokers (${brokers}) refused the SASL ${mechanism.toUpperCase()} login: ${e.message}; check ${AT}.sasl (mechanism, username, password/passwordEnv/passwordFile or token)`,
        { field: `${AT}.sasl`, cause: plainCause(e) },
      );
    }
    if (typeof code === 'string' && TLS_CODE.test(code)) {
      return new ConnectionError(
        `${AT}: TLS to the brokers (${brokers}) failed: ${e.message} (${code}); check ${AT}.tls (caFile, servername, certFile/keyFile) and that these are the brokers' TLS listeners`,
        { field: `${AT}.tls`, cause: plainCause(e) },
      );
    }
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** The error, its causes and aggregated errors, breadth first (bounded). */
export function errorChain(err: unknown): Error[] {
  const out: Error[] = [];
  const queue: unknown[] = [err];
  while (queue.length > 0 && out.length < 32) {
    const e = queue.shift();
    if (!(e instanceof Error) || out.includes(e)) continue;
    out.push(e);
    queue.push(e.cause, (e as { originalError?: unknown }).originalError);
    if (e instanceof AggregateError) queue.push(...(e.errors as unknown[]));
  }
  return out;
}

function plainCause(e: Error): Error {
  const cause = new Error(e.message);
  cause.name = e.name;
  return cause;
}
