// Reads the secrets and certificate files that connections name, once, at start-up (and in
// `validate-config`), so that a missing variable or an unreadable key is a ConfigError naming the
// field, not a connection that fails later with a TLS or SASL message.
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from '../errors.ts';
import type { TlsConfig } from './connection-schema.ts';

export type Environment = Record<string, string | undefined>;

/** The three ways to give one secret; `at` is the config path of the object holding them. */
export interface SecretSpec {
  inline: string | undefined;
  env: string | undefined;
  file: string | undefined;
}

export function secretSpec(holder: object, key: string): SecretSpec {
  const fields = holder as Record<string, unknown>;
  const text = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
  return {
    inline: text(fields[key]),
    env: text(fields[`${key}Env`]),
    file: text(fields[`${key}File`]),
  };
}

export function isGiven(spec: SecretSpec): boolean {
  return spec.inline !== undefined || spec.env !== undefined || spec.file !== undefined;
}

/** At most one of key, keyEnv, keyFile. */
export function checkOneWay(spec: SecretSpec, at: string, key: string): void {
  const given = [
    spec.inline !== undefined ? key : undefined,
    spec.env !== undefined ? `${key}Env` : undefined,
    spec.file !== undefined ? `${key}File` : undefined,
  ].filter((f) => f !== undefined);
  if (given.length > 1) {
    throw new ConfigError(
      `${at}: ${given.join(' and ')} are both set; give the ${key} one way only`,
      { field: `${at}.${given[1] ?? key}` },
    );
  }
}

/** The secret's value; undefined when none of the three fields is set. */
export function readSecret(
  spec: SecretSpec,
  at: string,
  key: string,
  env: Environment,
): string | undefined {
  checkOneWay(spec, at, key);
  if (spec.inline !== undefined) return spec.inline;
  if (spec.env !== undefined) {
    const value = env[spec.env];
    if (value === undefined || value === '') {
      throw new ConfigError(
        `${at}.${key}Env names ${spec.env}, but ${spec.env} is not set (or empty); export it or use ${key}File`,
        { field: `${at}.${key}Env` },
      );
    }
    return value;
  }
  if (spec.file !== undefined) {
    // One trailing newline is how secret files are usually written; it is not part of the secret.
    const value = readText(spec.file, `${at}.${key}File`).replace(/\r?\n$/, '');
    if (value === '') {
      throw new ConfigError(`${at}.${key}File: ${spec.file} is empty; write the ${key} in it`, {
        field: `${at}.${key}File`,
      });
    }
    return value;
  }
  return undefined;
}

export function readText(path: string, field: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (cause) {
    const code = (cause as { code?: unknown }).code;
    const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable' : '';
    throw new ConfigError(
      `${field}: cannot read ${path}${why === '' ? '' : ` (it ${why})`}; fix the path or the file's permissions`,
      { field, cause },
    );
  }
}

/** Node TLS options (ca, cert, key, passphrase, servername, checks) from a `tls` block. */
export interface TlsFiles {
  ca?: string;
  cert?: string;
  key?: string;
  passphrase?: string;
  servername?: string;
  rejectUnauthorized: boolean;
  checkHostname: boolean;
}

export function readTls(tls: TlsConfig, at: string, env: Environment): TlsFiles {
  if ((tls.certFile === undefined) !== (tls.keyFile === undefined)) {
    const missing = tls.certFile === undefined ? 'certFile' : 'keyFile';
    throw new ConfigError(
      `${at}.${missing} is missing: a client certificate needs both certFile and keyFile`,
      { field: `${at}.${missing}` },
    );
  }
  const out: TlsFiles = {
    rejectUnauthorized: tls.rejectUnauthorized,
    checkHostname: tls.checkHostname,
  };
  if (tls.servername !== undefined) out.servername = tls.servername;
  if (tls.caFile !== undefined) {
    out.ca = readText(tls.caFile, `${at}.caFile`);
    checkCertificates(out.ca, `${at}.caFile`, tls.caFile);
  }
  if (tls.certFile !== undefined && tls.keyFile !== undefined) {
    out.cert = readText(tls.certFile, `${at}.certFile`);
    checkCertificates(out.cert, `${at}.certFile`, tls.certFile);
    out.key = readText(tls.keyFile, `${at}.keyFile`);
    const passphrase = readSecret(secretSpec(tls, 'keyPassword'), at, 'keyPassword', env);
    if (passphrase !== undefined) out.passphrase = passphrase;
    try {
      createPrivateKey(
        passphrase === undefined ? out.key : { key: out.key, passphrase, format: 'pem' },
      );
    } catch (cause) {
      throw new ConfigError(
        `${at}.keyFile: ${tls.keyFile} is not a PEM private key${passphrase === undefined ? ' (or it is encrypted: set keyPasswordEnv or keyPasswordFile)' : ' or the key password is wrong'}`,
        { field: `${at}.keyFile`, cause },
      );
    }
  } else if (isGiven(secretSpec(tls, 'keyPassword'))) {
    throw new ConfigError(`${at}: a keyPassword without keyFile; add keyFile or remove it`, {
      field: `${at}.keyPassword`,
    });
  }
  return out;
}

function checkCertificates(pem: string, field: string, path: string): void {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g);
  try {
    if (blocks === null) throw new Error('no PEM certificate block');
    for (const block of blocks) new X509Certificate(block);
  } catch (cause) {
    throw new ConfigError(
      `${field}: ${path} holds no valid PEM certificate (-----BEGIN CERTIFICATE-----); convert it with openssl x509 -outform PEM`,
      { field, cause },
    );
  }
}
