// A Confluent-compatible Schema Registry of the test file's own: the project's local Apicurio
// build (scripts/services/registry-local.ts), started in the file's beforeAll and removed in its
// afterAll, so that a test may stop it and bring it back with its schemas (the outage tests).
// SCHEMA_REGISTRY_URL names a registry that already runs instead: nothing is started, and the
// tests that stop it are skipped, since this run does not own it.
import { defaultCacheDir } from '../../../scripts/services/kafka-local.ts';
import { CCOMPAT_PATH, startRegistry } from '../../../scripts/services/registry-local.ts';
import { stoppableService } from './stoppable-service.ts';

export interface StoppableSchemaRegistry {
  /** The Confluent-compatible base URL (…/apis/ccompat/v7 for the local one). */
  url: () => string;
  /** False for a registry named by SCHEMA_REGISTRY_URL: it cannot be stopped from here. */
  managed: boolean;
  stop: () => Promise<void>;
  /** Starts it again on the same port with the schemas (and ids) it had. */
  start: () => Promise<void>;
}

function externalUrl(): string | undefined {
  const url = process.env['SCHEMA_REGISTRY_URL'];
  return url === undefined || url === '' ? undefined : url.replace(/\/+$/, '');
}

/** Registers the file's beforeAll/afterAll that start and remove it. */
export function stoppableSchemaRegistry(name: string): StoppableSchemaRegistry {
  const external = externalUrl();
  if (external !== undefined) {
    const notOurs = (): Promise<void> =>
      Promise.reject(
        new Error(
          `SCHEMA_REGISTRY_URL=${external} is not started by this run: it cannot be stopped`,
        ),
      );
    return { url: () => external, managed: false, stop: notOurs, start: notOurs };
  }
  // The first start of a fresh machine builds the registry (minutes): vitest's hook timeout is
  // the hang guard, and the launcher's own bound is on silence in the registry's log.
  const service = stoppableService(name, (port, dataDir, first) =>
    startRegistry({
      cacheDir: defaultCacheDir(),
      port,
      dataDir,
      keepData: !first,
      startTimeoutMs: 120_000,
    }),
  );
  return {
    url: () => {
      if (service.port() === 0)
        throw new Error('the Schema Registry starts in beforeAll: ask for its URL in a test');
      return `http://127.0.0.1:${service.port()}${CCOMPAT_PATH}`;
    },
    managed: true,
    stop: service.stop,
    start: service.start,
  };
}
