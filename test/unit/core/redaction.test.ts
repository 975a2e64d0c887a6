// No secret reaches a log line: the CLI's real pino logger writes into a buffer, and every shape
// a secret arrives in (connection strings, Redis AUTH arguments inside ioredis errors, fields and
// headers named like secrets, bearer tokens in text) must come out scrubbed.
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createCliLogger } from '../../../src/cli/logger.ts';
import { redactText } from '../../../src/redaction.ts';

const SECRET = 'Sup3r-s3cret-PW';

function bufferLogger(): { logger: ReturnType<typeof createCliLogger>; text: () => string } {
  const chunks: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createCliLogger('debug', sink), text: () => chunks.join('') };
}

/** A real ioredis error from an AUTH refused by a server that answers WRONGPASS to everything. */
async function realAuthError(): Promise<Error> {
  const server = createServer((socket) => {
    socket.on('data', () => socket.write('-WRONGPASS invalid username-password pair\r\n'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = new Redis(`redis://worker:${SECRET}@127.0.0.1:${port}`, {
    lazyConnect: true,
    retryStrategy: () => null,
  });
  try {
    const [args] = await Promise.all([
      once(client, 'error'),
      client.connect().catch(() => undefined),
    ]);
    const err = args[0] as Error;
    return err;
  } finally {
    client.disconnect();
    server.close();
  }
}

describe('log redaction', () => {
  it('scrubs the AUTH arguments of a real ioredis error (raw pino would log them)', async () => {
    const err = await realAuthError();
    // The shape that leaked: the refused command and its arguments ride on the error.
    expect(JSON.stringify((err as unknown as { command: unknown }).command)).toContain(SECRET);
    const raw: string[] = [];
    pino({}, { write: (line: string) => raw.push(line) }).error({ err }, 'redis error');
    expect(raw.join('')).toContain(SECRET);

    const { logger, text } = bufferLogger();
    logger.error({ err }, 'redis error');
    logger.error({ queue: 'jobs', error: err }, 'BullMQ worker error');
    const logged = text();
    expect(logged).toContain('WRONGPASS');
    expect(logged).toContain('"name":"auth"');
    expect(logged).not.toContain(SECRET);
  });

  it('scrubs connection strings, secret-named fields and headers, bearer tokens and nested errors', () => {
    const { logger, text } = bufferLogger();
    const url = `rediss://worker:${SECRET}@redis.internal:6380/0`;
    logger.warn(
      { url, kafkajs: { broker: 'b:9093', sasl: { mechanism: 'plain', password: SECRET } } },
      `connecting to ${url}`,
    );
    logger.info(
      {
        headers: { authorization: `Bearer ${SECRET}`, 'x-api-key': SECRET, 'content-type': 'json' },
        KAFKA_PASSWORD: SECRET,
        clientSecret: SECRET,
        token: SECRET,
        maxTokens: 512,
      },
      'record',
    );
    const cause = new Error(`dial ${url} failed`);
    logger.error(
      {
        err: new Error('start-up failed', { cause }),
        attempts: [new AggregateError([cause], 'all failed')],
      },
      `password=${SECRET} rejected; Authorization: Bearer ${SECRET}`,
    );
    const logged = text();
    expect(logged).not.toContain(SECRET);
    // What is not secret stays readable.
    expect(logged).toContain('rediss://worker:[redacted]@redis.internal:6380/0');
    expect(logged).toContain('"maxTokens":512');
    expect(logged).toContain('"content-type":"json"');
    expect(logged).toContain('"broker":"b:9093"');
    expect(logged.split('\n').filter((l) => l !== '').length).toBe(3);
  });

  it('keeps text without secrets as it was', () => {
    const plain = 'routes.0.sink: topic out-events at kafka://broker:9092 (maxTokens=64)';
    expect(redactText(plain)).toBe(plain);
    expect(redactText('amqp://:pw@host')).toBe('amqp://:[redacted]@host');
  });
});
