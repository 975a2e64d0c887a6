// connections.kafka.tls/sasl and connections.redis: what the YAML may say, how secrets are read
// (env, files, inline ${VAR}), and that every mistake is a ConfigError naming the field.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  checkConnections,
  describeConnections,
} from '../../../src/connectors/connection-checks.ts';
import { loadConfigFile, parseConfigText } from '../../../src/config/load-config.ts';
import type { WorkerConfig } from '../../../src/config/schema.ts';
import {
  kafkaSecurityOf,
  kafkaConnectError,
} from '../../../src/connectors/kafka/kafka-security.ts';
import { ConfigError, ConnectionError } from '../../../src/errors.ts';
import { isFatalRedisError } from '../../../src/connectors/redis/redis-connection.ts';
import { Connections } from '../../../src/connectors/connections.ts';
import { silentLogger } from '../../../src/logger.ts';

const TLS = join(import.meta.dirname, '..', '..', 'fixtures', 'tls');
const CA = join(TLS, 'ca.pem');
const CERT = join(TLS, 'client.pem');
const KEY = join(TLS, 'client-key.pem');
const ENCRYPTED_KEY = join(TLS, 'client-key-encrypted.pem');

function withConnections(connections: string): string {
  return `
models:
  m: { path: models/x }
pipelines:
  p: { task: featureExtraction, model: m }
routes:
  - source: { type: kafka, topic: in, groupId: g }
    pipeline: p
    sink: { type: redis-stream, stream: out }
connections:
${connections}
`;
}

function kafkaOf(config: WorkerConfig): NonNullable<WorkerConfig['connections']['kafka']> {
  const kafka = config.connections.kafka;
  if (kafka === undefined) throw new Error('no connections.kafka');
  return kafka;
}

/** The ConfigError's message and field for a config whose connections fail the start-up check. */
function refusal(
  connections: string,
  env: Record<string, string> = {},
): { message: string; field: string | undefined } {
  try {
    checkConnections(parseConfigText(withConnections(connections), env), env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return { message: (err as ConfigError).message, field: (err as ConfigError).field };
  }
  throw new Error('expected a ConfigError');
}

const redis = '  redis: { url: "redis://127.0.0.1:6379" }';

describe('connections.kafka security', () => {
  it('reads TLS files and SCRAM credentials from env and file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hugot-secret-'));
    writeFileSync(join(dir, 'password'), 'from-a-file\n');
    const config = parseConfigText(
      withConnections(`  kafka:
    brokers: [broker-1:9093]
    tls: { caFile: ${CA}, certFile: ${CERT}, keyFile: ${KEY}, servername: kafka.internal }
    sasl: { mechanism: scram-sha-512, usernameEnv: KAFKA_USER, passwordFile: ${join(dir, 'password')} }
${redis}`),
      {},
    );
    const security = kafkaSecurityOf(kafkaOf(config), { KAFKA_USER: 'hugot' });
    expect(security.ssl?.ca).toBe(readFileSync(CA, 'utf8'));
    expect(security.ssl?.cert).toBe(readFileSync(CERT, 'utf8'));
    expect(security.ssl?.key).toBe(readFileSync(KEY, 'utf8'));
    expect(security.ssl?.servername).toBe('kafka.internal');
    expect(security.ssl?.rejectUnauthorized).toBe(true);
    // Hostname verification stays Node's default unless turned off.
    expect(security.ssl?.checkServerIdentity).toBeUndefined();
    // The file's trailing newline is not part of the password.
    expect(security.sasl).toEqual({
      mechanism: 'scram-sha-512',
      username: 'hugot',
      password: 'from-a-file',
    });
  });

  it('takes inline ${VAR} secrets, PLAIN and SCRAM-SHA-256, and turns hostname checks off only when asked', () => {
    for (const mechanism of ['plain', 'scram-sha-256'] as const) {
      const config = parseConfigText(
        withConnections(`  kafka:
    brokers: [b:9093]
    tls: { checkHostname: false }
    sasl: { mechanism: ${mechanism}, username: hugot, password: "\${KAFKA_PASSWORD}" }
${redis}`),
        { KAFKA_PASSWORD: 'p@ss w0rd' },
      );
      const security = kafkaSecurityOf(kafkaOf(config), {});
      expect(security.sasl).toEqual({ mechanism, username: 'hugot', password: 'p@ss w0rd' });
      expect(security.ssl?.checkServerIdentity?.('b', {} as never)).toBeUndefined();
      expect(security.ssl?.rejectUnauthorized).toBe(true);
    }
  });

  it('OAUTHBEARER re-reads its token file at every authentication', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hugot-token-'));
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, 'token-one\n');
    const config = parseConfigText(
      withConnections(`  kafka:
    brokers: [b:9093]
    sasl: { mechanism: oauthbearer, tokenFile: ${tokenFile} }
${redis}`),
      {},
    );
    const sasl = kafkaSecurityOf(kafkaOf(config), {}).sasl;
    if (sasl?.mechanism !== 'oauthbearer') throw new Error('expected oauthbearer');
    expect(await sasl.oauthBearerProvider()).toEqual({ value: 'token-one' });
    writeFileSync(tokenFile, 'token-two\n');
    expect(await sasl.oauthBearerProvider()).toEqual({ value: 'token-two' });
  });

  it('names the field and the fix for every mistake', () => {
    const cases: [string, Record<string, string>, RegExp, string][] = [
      [
        'sasl: { mechanism: scram-sha-512, username: u, passwordEnv: KAFKA_PASSWORD }',
        {},
        /KAFKA_PASSWORD is not set/,
        'connections.kafka.sasl.passwordEnv',
      ],
      [
        'sasl: { mechanism: scram-sha-512, username: u, passwordFile: /nonexistent/pw }',
        {},
        /cannot read \/nonexistent\/pw \(it does not exist\)/,
        'connections.kafka.sasl.passwordFile',
      ],
      [
        'sasl: { mechanism: plain, username: u, password: a, passwordEnv: B }',
        { B: 'b' },
        /password and passwordEnv are both set/,
        'connections.kafka.sasl.passwordEnv',
      ],
      [
        'sasl: { mechanism: scram-sha-256, username: u }',
        {},
        /password is missing/,
        'connections.kafka.sasl.password',
      ],
      [
        'sasl: { mechanism: oauthbearer }',
        {},
        /needs a token; set tokenFile/,
        'connections.kafka.sasl.token',
      ],
      [
        'sasl: { mechanism: oauthbearer, username: u, tokenEnv: T }',
        { T: 't' },
        /OAUTHBEARER authenticates with a token/,
        'connections.kafka.sasl.username',
      ],
      [
        `tls: { certFile: ${CERT} }`,
        {},
        /keyFile is missing: a client certificate needs both/,
        'connections.kafka.tls.keyFile',
      ],
      [
        `tls: { caFile: ${KEY} }`,
        {},
        /holds no valid PEM certificate/,
        'connections.kafka.tls.caFile',
      ],
      [
        `tls: { certFile: ${CERT}, keyFile: ${ENCRYPTED_KEY} }`,
        {},
        /or it is encrypted: set keyPasswordEnv/,
        'connections.kafka.tls.keyFile',
      ],
      [
        `tls: { certFile: ${CERT}, keyFile: ${ENCRYPTED_KEY}, keyPasswordEnv: KP }`,
        { KP: 'not-the-passphrase' },
        /the key password is wrong/,
        'connections.kafka.tls.keyFile',
      ],
    ];
    for (const [block, env, message, field] of cases) {
      const refused = refusal(`  kafka:\n    brokers: [b:9093]\n    ${block}\n${redis}`, env);
      expect(refused.message, block).toMatch(message);
      expect(refused.field, block).toBe(field);
    }
    // The right passphrase opens the encrypted key.
    const ok = parseConfigText(
      withConnections(`  kafka:
    brokers: [b:9093]
    tls: { certFile: ${CERT}, keyFile: ${ENCRYPTED_KEY}, keyPasswordEnv: KP }
${redis}`),
      {},
    );
    expect(kafkaSecurityOf(kafkaOf(ok), { KP: 'fixture-passphrase' }).ssl?.passphrase).toBe(
      'fixture-passphrase',
    );
  });

  it('rejects unknown mechanisms and fields at parse time', () => {
    expect(() =>
      parseConfigText(
        withConnections(`  kafka: { brokers: [b:1], sasl: { mechanism: gssapi } }\n${redis}`),
        {},
      ),
    ).toThrow(/connections\.kafka\.sasl\.mechanism/);
    expect(() =>
      parseConfigText(
        withConnections(`  kafka: { brokers: [b:1], tls: { verify: false } }\n${redis}`),
        {},
      ),
    ).toThrow(/verify/);
  });

  it('turns a refused SASL login or a failed certificate check into a ConnectionError without the secret', () => {
    const config = parseConfigText(
      withConnections(`  kafka:
    brokers: [b:9093]
    tls: {}
    sasl: { mechanism: scram-sha-512, username: hugot, password: "\${P}" }
${redis}`),
      { P: 'hunter2-secret' },
    );
    const sasl = Object.assign(new Error('SASL SCRAM SHA512 authentication failed'), {
      name: 'KafkaJSSASLAuthenticationError',
    });
    const wrapped = new Error('retries exhausted', { cause: sasl });
    const explained = kafkaConnectError(wrapped, kafkaOf(config));
    expect(explained).toBeInstanceOf(ConnectionError);
    expect((explained as ConnectionError).field).toBe('connections.kafka.sasl');
    expect(explained.message).toMatch(/refused the SASL SCRAM-SHA-512 login/);
    expect(JSON.stringify(explained)).not.toContain('hunter2');
    const tls = Object.assign(new Error('self-signed certificate'), {
      code: 'SELF_SIGNED_CERT_IN_CHAIN',
    });
    expect((kafkaConnectError(tls, kafkaOf(config)) as ConnectionError).field).toBe(
      'connections.kafka.tls',
    );
    const transient = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(kafkaConnectError(transient, kafkaOf(config))).toBe(transient);
  });
});

describe('connections.redis security', () => {
  it('reads the ACL user and password from env/file and TLS files', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hugot-redis-'));
    writeFileSync(join(dir, 'pw'), 'redis-pw\n');
    const config = parseConfigText(
      withConnections(`  kafka: { brokers: [b:1] }
  redis:
    url: rediss://redis.internal:6380/2
    usernameEnv: REDIS_USER
    passwordFile: ${join(dir, 'pw')}
    tls: { caFile: ${CA}, checkHostname: false }`),
      {},
    );
    const target = Connections.resolve(config, silentLogger, { REDIS_USER: 'worker' }).redis(
      'sink',
    );
    expect(target.url).toBe('rediss://redis.internal:6380/2');
    expect(target.options.username).toBe('worker');
    expect(target.options.password).toBe('redis-pw');
    expect(target.options.tls?.ca).toBe(readFileSync(CA, 'utf8'));
    expect(target.options.tls?.checkServerIdentity?.('x', {} as never)).toBeUndefined();
    expect(describeConnections(config)).toEqual(['kafka b:1 (plaintext)', 'redis (TLS, ACL user)']);
  });

  it('refuses a username without a password, and two ways of giving one', () => {
    expect(
      refusal(`  kafka: { brokers: [b:1] }\n  redis: { url: "redis://r", username: u }`),
    ).toEqual({
      message: expect.stringMatching(/username is set without a password/) as unknown,
      field: 'connections.redis.password',
    });
    expect(
      refusal(
        `  kafka: { brokers: [b:1] }\n  redis: { url: "redis://r", password: a, passwordFile: /x }`,
      ).field,
    ).toBe('connections.redis.passwordFile');
  });

  it('treats credential and certificate refusals as fatal, a down server as transient', () => {
    expect(isFatalRedisError(new Error('WRONGPASS invalid username-password pair'))).toBe(true);
    expect(isFatalRedisError(new Error('NOAUTH Authentication required.'))).toBe(true);
    expect(
      isFatalRedisError(Object.assign(new Error('x'), { code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' })),
    ).toBe(true);
    expect(isFatalRedisError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
  });
});

describe('certificate and secret paths', () => {
  it('are relative to the config file, as model paths are', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hugot-config-'));
    writeFileSync(join(dir, 'ca.pem'), readFileSync(CA));
    writeFileSync(join(dir, 'kafka-password'), 'pw');
    writeFileSync(
      join(dir, 'worker.yaml'),
      withConnections(`  kafka:
    brokers: [b:9093]
    tls: { caFile: ca.pem }
    sasl: { mechanism: plain, username: u, passwordFile: kafka-password }
${redis}`),
    );
    const config = await loadConfigFile(join(dir, 'worker.yaml'), {});
    expect(config.connections.kafka?.tls?.caFile).toBe(join(dir, 'ca.pem'));
    expect(config.connections.kafka?.sasl?.passwordFile).toBe(join(dir, 'kafka-password'));
    expect(() => checkConnections(config, {})).not.toThrow();
  });
});
