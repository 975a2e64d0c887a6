// A Redis of the test file's own (not the suite's shared one), with its append-only file on, so
// that a test can stop it under load and bring it back with its data: the outage tests.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../../scripts/services/process-control.ts';
import { startRedis, type LocalRedis } from '../../../scripts/services/redis-local.ts';

export interface StoppableRedis {
  url: () => string;
  stop: () => Promise<void>;
  /** Starts it again on the same port and data. */
  start: () => Promise<void>;
}

/** Registers the file's beforeAll/afterAll that start and remove it. */
export function stoppableRedis(name: string): StoppableRedis {
  let port = 0;
  let dataDir = '';
  let redis: LocalRedis | undefined;
  const start = async (): Promise<void> => {
    redis = await startRedis({ port, dataDir, persistent: true, startTimeoutMs: 60_000 });
  };
  const stop = async (): Promise<void> => {
    await redis?.stop();
    redis = undefined;
  };
  beforeAll(async () => {
    port = await freePort();
    dataDir = mkdtempSync(join(tmpdir(), `hugot-${name}-`));
    await start();
  });
  afterAll(async () => {
    await stop();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return { url: () => `redis://127.0.0.1:${port}`, stop, start };
}
