// connections.schemaRegistry with its secrets and TLS files read, once, at start-up (and by
// `validate-config`), so that a missing variable or an unreadable key is a ConfigError naming the
// field and not a 401 or a TLS failure on the first record.
import type { SchemaRegistryConnectionConfig } from '../config/connection-schema.ts';
import {
  readSecret,
  readTls,
  secretSpec,
  type Environment,
  type TlsFiles,
} from '../config/secrets.ts';
import { ConfigError } from '../errors.ts';

const AT = 'connections.schemaRegistry';

export interface RegistryTarget {
  urls: string[];
  /** `user:password` for Basic auth. */
  basic?: string;
  bearer?: string;
  tls?: TlsFiles;
  requestTimeoutMs: number;
  cacheCapacity: number;
}

export function registryTargetOf(
  registry: SchemaRegistryConnectionConfig,
  env: Environment,
): RegistryTarget {
  const target: RegistryTarget = {
    urls: registry.urls,
    requestTimeoutMs: registry.requestTimeoutMs,
    cacheCapacity: registry.cacheCapacity,
  };
  const auth = registry.auth;
  if (auth?.type === 'basic') {
    const at = `${AT}.auth`;
    const username = readSecret(secretSpec(auth, 'username'), at, 'username', env);
    const password = readSecret(secretSpec(auth, 'password'), at, 'password', env);
    if (username === undefined || password === undefined)
      throw new ConfigError(
        `${at}: basic auth needs a username and a password (username/usernameEnv/usernameFile and password/passwordEnv/passwordFile)`,
        { field: `${at}.${username === undefined ? 'username' : 'password'}` },
      );
    if (username.includes(':'))
      throw new ConfigError(`${at}.username: a Basic auth user name cannot hold ':'`, {
        field: `${at}.username`,
      });
    target.basic = `${username}:${password}`;
  } else if (auth?.type === 'bearer') {
    const token = readSecret(secretSpec(auth, 'token'), `${AT}.auth`, 'token', env);
    if (token === undefined)
      throw new ConfigError(`${AT}.auth: bearer auth needs token, tokenEnv or tokenFile`, {
        field: `${AT}.auth.token`,
      });
    target.bearer = token;
  }
  if (registry.tls !== undefined) {
    if (registry.urls.some((url) => !url.startsWith('https://')))
      throw new ConfigError(
        `${AT}.tls is set, but not every URL is https://; use https:// URLs or remove tls`,
        { field: `${AT}.urls` },
      );
    target.tls = readTls(registry.tls, `${AT}.tls`, env);
  }
  return target;
}
