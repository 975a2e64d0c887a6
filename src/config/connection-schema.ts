// connections.kafka, connections.redis and connections.schemaRegistry: where the brokers are and how to prove who we are.
// Secrets never have to sit in the file: each one can come from an environment variable
// (`passwordEnv: NAME`), a file (`passwordFile: /run/secrets/x`, re-read by nothing but start-up,
// except OAUTHBEARER tokens) or `${NAME}` interpolation of an inline field. docs/security.md.
import { z } from 'zod';

const name = z.string().min(1);
const envName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name such as KAFKA_PASSWORD');

/** A secret given inline (usually `${VAR}`), by environment variable or by file: at most one. */
function secretFields<K extends string>(key: K) {
  return {
    [key]: z.string().min(1).optional(),
    [`${key}Env`]: envName.optional(),
    [`${key}File`]: name.optional(),
  } as Record<K | `${K}Env` | `${K}File`, z.ZodOptional<z.ZodString>>;
}

export const tlsSchema = z
  .object({
    /** PEM file of the CA(s) that signed the server's certificate; default: Node's trusted CAs. */
    caFile: name.optional(),
    /** PEM client certificate and key (mutual TLS); both or neither. */
    certFile: name.optional(),
    keyFile: name.optional(),
    ...secretFields('keyPassword'),
    /** The name sent in SNI and checked against the certificate; default: the host connected to. */
    servername: name.optional(),
    /** Check that the certificate names the host (or `servername`). */
    checkHostname: z.boolean().default(true),
    /** Check the certificate chain against the CAs. Turning this off is for tests only. */
    rejectUnauthorized: z.boolean().default(true),
  })
  .strict();

export const saslMechanisms = ['plain', 'scram-sha-256', 'scram-sha-512', 'oauthbearer'] as const;

export const saslSchema = z
  .object({
    mechanism: z.enum(saslMechanisms),
    ...secretFields('username'),
    ...secretFields('password'),
    /** OAUTHBEARER: the bearer token; a tokenFile is read again at every authentication. */
    ...secretFields('token'),
  })
  .strict();

/** The Kafka client library behind the driver seam (docs/sources-and-sinks.md compares them). */
export const kafkaClients = ['platformatic', 'kafkajs'] as const;

/**
 * A broker is host:port. One written as user:password@host:port would carry a secret into every
 * log line and `validate-config` report that names the brokers, so it is refused (without
 * echoing it) and the credentials sent to `sasl`, whose secrets are redacted.
 */
const broker = name.refine(
  (value) => !value.includes('@'),
  'a broker is host:port; credentials in it (user:password@host) are refused, so that they never reach a log: give them under connections.kafka.sasl (usernameEnv / passwordEnv)',
);

export const kafkaConnectionSchema = z
  .object({
    brokers: z.array(broker).min(1),
    /** Unset: platformatic (kafkaClientFor in connectors/kafka/driver-for.ts). */
    client: z.enum(kafkaClients).optional(),
    clientId: z.string().default('hugot-stream'),
    /** Present (even `{}`): connect with TLS. */
    tls: tlsSchema.optional(),
    sasl: saslSchema.optional(),
    /** Milliseconds to wait for a TCP/TLS connection and for SASL authentication. */
    connectionTimeoutMs: z.number().int().min(1).default(10_000),
    authenticationTimeoutMs: z.number().int().min(1).default(10_000),
  })
  .strict();

export const redisConnectionSchema = z
  .object({
    /** redis://host:port/db, or rediss:// for TLS. Credentials belong in username/password*. */
    url: name,
    /** ACL user (Redis 6+); without it, `password` authenticates the `default` user. */
    ...secretFields('username'),
    ...secretFields('password'),
    /** Present (even `{}`): connect with TLS, whatever the URL's scheme. */
    tls: tlsSchema.optional(),
  })
  .strict();

/**
 * A registry URL is http(s)://host:port[/path]; one with user:password@ in it would carry a secret
 * into logs and `validate-config`, so it is refused and the credentials sent to `auth`.
 */
const registryUrl = name
  .refine(
    (value) => /^https?:\/\//.test(value),
    'a Schema Registry URL starts with http:// or https://',
  )
  .refine(
    (value) => !/^https?:\/\/[^/]*@/.test(value),
    'credentials in a registry URL (user:password@host) are refused, so that they never reach a log: give them under connections.schemaRegistry.auth (usernameEnv / passwordEnv, or tokenEnv)',
  );

/** Basic (an API key and secret, a user and password) or a bearer token; at most one. */
const registryAuthSchema = z.discriminatedUnion('type', [
  z
    .object({ type: z.literal('basic'), ...secretFields('username'), ...secretFields('password') })
    .strict(),
  z.object({ type: z.literal('bearer'), ...secretFields('token') }).strict(),
]);

export const schemaRegistryConnectionSchema = z
  .object({
    /** One or more base URLs of the same registry cluster, tried in order on each request. */
    urls: z.array(registryUrl).min(1),
    auth: registryAuthSchema.optional(),
    /** Present (even `{}`): the TLS settings of https:// URLs (CA, client certificate). */
    tls: tlsSchema.optional(),
    /** Milliseconds one request may take before it counts as an outage and is retried. */
    requestTimeoutMs: z.number().int().min(1).default(10_000),
    /** Schemas kept by id (and derived output schemas); writers rarely use more than a few. */
    cacheCapacity: z.number().int().min(1).default(1000),
  })
  .strict();

export type TlsConfig = z.output<typeof tlsSchema>;
export type SaslConfig = z.output<typeof saslSchema>;
export type KafkaConnectionConfig = z.output<typeof kafkaConnectionSchema>;
export type RedisConnectionConfig = z.output<typeof redisConnectionSchema>;
export type SchemaRegistryConnectionConfig = z.output<typeof schemaRegistryConnectionSchema>;
