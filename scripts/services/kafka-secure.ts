// The secured listener of a local Kafka broker: SASL_SSL (TLS with certificates from
// tls-certificates.ts) with SCRAM-SHA-512, SCRAM-SHA-256 and PLAIN users, and OAUTHBEARER with
// unsecured (unsigned) JWTs, which Kafka accepts out of the box for development. SCRAM users are
// created when the storage is formatted (kafka-storage format --add-scram).
import { join } from 'node:path';
import { makeCertificates, type LocalCertificates } from './tls-certificates.ts';

/** A secured listener as kafka-local.ts adds it to a broker, knowing nothing of security. */
export interface SecureListener {
  /** Listener name and security protocol, e.g. SASL_SSL. */
  protocol: 'SASL_SSL' | 'SSL' | 'SASL_PLAINTEXT';
  port: number;
  /** server.properties lines for it (keystore, JAAS, mechanisms). */
  properties: string[];
  /** Extra `kafka-storage format` arguments (--add-scram for SCRAM users). */
  formatArgs: string[];
}

export interface KafkaUser {
  name: string;
  /** Letters and digits only: the --add-scram syntax has no escaping. */
  password: string;
}

export interface SecureKafkaSetup {
  listener: SecureListener;
  certificates: LocalCertificates;
  users: KafkaUser[];
}

export const DEFAULT_KAFKA_USER: KafkaUser = { name: 'hugot', password: 'hugotLocalSecret1' };

export function saslSslListener(
  port: number,
  certificatesDir: string,
  users: KafkaUser[] = [DEFAULT_KAFKA_USER],
): SecureKafkaSetup {
  for (const user of users) {
    if (!/^[A-Za-z0-9]+$/.test(user.name) || !/^[A-Za-z0-9]+$/.test(user.password))
      throw new Error(`Kafka user ${user.name}: use letters and digits only`);
  }
  const certificates = makeCertificates(certificatesDir);
  const prefix = 'listener.name.sasl_ssl';
  const plainUsers = users.map((u) => `user_${u.name}="${u.password}"`).join(' ');
  const properties = [
    `${prefix}.sasl.enabled.mechanisms=SCRAM-SHA-512,SCRAM-SHA-256,PLAIN,OAUTHBEARER`,
    `${prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;`,
    `${prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required ${plainUsers};`,
    `${prefix}.oauthbearer.sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub="broker";`,
    `${prefix}.ssl.keystore.type=PKCS12`,
    `${prefix}.ssl.keystore.location=${certificates.serverKeystoreFile}`,
    `${prefix}.ssl.keystore.password=${certificates.keystorePassword}`,
    `${prefix}.ssl.key.password=${certificates.keystorePassword}`,
    `${prefix}.ssl.client.auth=none`,
  ];
  const formatArgs = users.flatMap((u) =>
    ['SCRAM-SHA-512', 'SCRAM-SHA-256'].flatMap((m) => [
      '--add-scram',
      `${m}=[name=${u.name},password=${u.password}]`,
    ]),
  );
  return {
    listener: { protocol: 'SASL_SSL', port, properties, formatArgs },
    certificates,
    users,
  };
}

/** An unsigned JWT (alg none) that Kafka's default OAUTHBEARER validator accepts. */
export function unsecuredJwt(subject: string, lifetimeS = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (o: object): string => Buffer.from(JSON.stringify(o)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub: subject, iat: now, exp: now + lifetimeS })}.`;
}

export function certificatesDirFor(dataDir: string): string {
  return join(dataDir, 'tls');
}
