// A Redis of the test file's own (not the suite's shared one), with its append-only file on, so
// that a test can stop it under load and bring it back with its data: the outage tests.
import { startRedis } from '../../../scripts/services/redis-local.ts';
import { stoppableService } from './stoppable-service.ts';

export interface StoppableRedis {
  url: () => string;
  stop: () => Promise<void>;
  /** Starts it again on the same port and data. */
  start: () => Promise<void>;
}

/** Registers the file's beforeAll/afterAll that start and remove it. */
export function stoppableRedis(name: string): StoppableRedis {
  const service = stoppableService(name, (port, dataDir) =>
    startRedis({ port, dataDir, persistent: true, startTimeoutMs: 60_000 }),
  );
  return {
    url: () => `redis://127.0.0.1:${service.port()}`,
    stop: service.stop,
    start: service.start,
  };
}
