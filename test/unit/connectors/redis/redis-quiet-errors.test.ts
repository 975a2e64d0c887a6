import { createServer } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { closeRedis, connectRedis } from '../../../../src/connectors/redis/redis-connection.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('Redis connections during an outage', () => {
  afterEach(() => vi.restoreAllMocks());

  it('keep connection errors off the console (the logger and the health state have them)', async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const port = await closedPort();
    const client = connectRedis({ url: `redis://127.0.0.1:${port}`, options: {} }, 'quiet-test');
    // Two failed attempts: the error event has fired at least once by the second.
    let attempts = 0;
    await new Promise<void>((resolve) =>
      client.on('reconnecting', () => {
        attempts += 1;
        if (attempts >= 2) resolve();
      }),
    );
    await closeRedis(client);
    expect(printed.mock.calls.filter((c) => String(c[0]).includes('[ioredis]'))).toEqual([]);
  });
});
