// Connection files (certificates, secrets) named relative to the config file.
import { isAbsolute, resolve } from 'node:path';
import type { WorkerConfig } from './schema.ts';

const FILE_FIELDS = [
  'caFile',
  'certFile',
  'keyFile',
  'keyPasswordFile',
  'usernameFile',
  'passwordFile',
  'tokenFile',
] as const;

/** Certificate and secret files are relative to the config file, as model paths are. */
export function resolveConnectionPaths(config: WorkerConfig, base: string): void {
  const { kafka, redis, schemaRegistry } = config.connections;
  const holders: (object | undefined)[] = [kafka?.tls, kafka?.sasl, redis, redis?.tls];
  holders.push(schemaRegistry?.auth, schemaRegistry?.tls);
  for (const holder of holders) {
    if (holder === undefined) continue;
    const fields = holder as Partial<Record<(typeof FILE_FIELDS)[number], string>>;
    for (const key of FILE_FIELDS) {
      const path = fields[key];
      if (path !== undefined && !isAbsolute(path)) fields[key] = resolve(base, path);
    }
  }
}
