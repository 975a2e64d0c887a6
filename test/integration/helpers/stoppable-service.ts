// The life of a service a test file owns and may stop and bring back (the outage tests): a free
// port and a data folder made in the file's beforeAll, the service started there, stopped and
// its folder removed in afterAll. `launch` starts it on that port and data; `first` is false for
// a restart, which keeps what the data folder holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { freePort } from '../../../scripts/services/process-control.ts';

export interface StoppableService {
  /** 0 until the file's beforeAll has run. */
  port: () => number;
  stop: () => Promise<void>;
  /** Starts it again on the same port and data. */
  start: () => Promise<void>;
}

export function stoppableService(
  name: string,
  launch: (port: number, dataDir: string, first: boolean) => Promise<{ stop: () => Promise<void> }>,
): StoppableService {
  let port = 0;
  let dataDir = '';
  let running: { stop: () => Promise<void> } | undefined;
  let first = true;
  const start = async (): Promise<void> => {
    running = await launch(port, dataDir, first);
    first = false;
  };
  const stop = async (): Promise<void> => {
    await running?.stop();
    running = undefined;
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
  return { port: () => port, stop, start };
}
