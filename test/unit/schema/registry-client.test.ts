// The registry client against a port nothing listens on: an outage, never a dead letter, and
// its error, logged through the worker's redaction, holds no credential.
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { RegistryUnavailableError } from '../../../src/errors.ts';
import { redactValue } from '../../../src/redaction.ts';
import { ConfluentSchemaRegistry } from '../../../src/schema/registry-client.ts';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('Confluent registry client', () => {
  it('turns a refused connection into an outage whose logged form keeps the secrets out', async () => {
    const port = await closedPort();
    for (const auth of [{ basic: 'sr-key:sr-s3cret-basic' }, { bearer: 'sr-s3cret-token' }]) {
      const registry = new ConfluentSchemaRegistry({
        urls: [`http://127.0.0.1:${port}`],
        requestTimeoutMs: 2_000,
        cacheCapacity: 10,
        ...auth,
      });
      const err = await registry.schemaById(1).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RegistryUnavailableError);
      expect((err as Error).message).toMatch(/ECONNREFUSED|did not answer reading schema id 1/);
      const logged = JSON.stringify(redactValue(err));
      expect(logged).not.toMatch(/s3cret/);
      expect(logged).not.toContain(Buffer.from('sr-key:sr-s3cret-basic').toString('base64'));
    }
  });
});
