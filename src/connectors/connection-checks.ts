// Start-up checks of connections.*: every secret variable set, every certificate and key file
// readable and well-formed, every mechanism given what it needs. `run` and `validate-config`
// call this before anything connects, so a mistake is a ConfigError naming the field.
import type { WorkerConfig } from '../config/schema.ts';
import type { Environment } from '../config/secrets.ts';
import { silentLogger } from '../logger.ts';
import { Connections } from './connections.ts';
import { redactText } from '../redaction.ts';

export function checkConnections(config: WorkerConfig, env: Environment = process.env): void {
  Connections.resolve(config, silentLogger, env);
}

/** One line for `validate-config`: how each connection authenticates (never the secrets). */
export function describeConnections(config: WorkerConfig): string[] {
  const lines: string[] = [];
  const kafka = config.connections.kafka;
  if (kafka !== undefined) {
    const how = [kafka.tls === undefined ? 'plaintext' : 'TLS'];
    if (kafka.sasl !== undefined) how.push(`SASL ${kafka.sasl.mechanism.toUpperCase()}`);
    lines.push(`kafka ${kafka.brokers.join(',')} (${how.join(', ')})`);
  }
  const redis = config.connections.redis;
  if (redis !== undefined) {
    const tls = redis.tls !== undefined || redis.url.startsWith('rediss:');
    const acl = redis.usernameEnv ?? redis.usernameFile ?? redis.username;
    const how = [tls ? 'TLS' : 'plaintext'];
    if (acl !== undefined) how.push('ACL user');
    else if (redis.password ?? redis.passwordEnv ?? redis.passwordFile) how.push('password');
    lines.push(`redis (${how.join(', ')})`);
  }
  const registry = config.connections.schemaRegistry;
  if (registry !== undefined) {
    const how = [registry.urls.every((u) => u.startsWith('https://')) ? 'TLS' : 'plaintext'];
    if (registry.auth !== undefined) how.push(`${registry.auth.type} auth`);
    lines.push(`schema registry ${registry.urls.map(redactText).join(',')} (${how.join(', ')})`);
  }
  return lines;
}
