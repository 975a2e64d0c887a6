// A TLS + SCRAM Kafka broker and a TLS + ACL Redis, started here by the project's launchers with
// certificates made by openssl: a real route runs through each, and a wrong password stops the
// worker at start-up with an error naming the connection, without the password in its output.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { ConnectionError } from '../../src/errors.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { certificatesDirFor, saslSslListener } from '../../scripts/services/kafka-secure.ts';
import {
  defaultCacheDir,
  startKafka,
  type LocalKafka,
} from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { startRedis, type LocalRedis } from '../../scripts/services/redis-local.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords, workerConfig } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const services = join(defaultCacheDir(), 'services');
let kafka: LocalKafka;
let secureBrokers: string;
let kafkaSetup: ReturnType<typeof saslSslListener>;
let redis: LocalRedis;
const secrets = mkdtempSync(join(tmpdir(), 'hugot-secrets-'));

beforeAll(async () => {
  const [plainPort, securePort, redisPort] = [await freePort(), await freePort(), await freePort()];
  const kafkaDir = join(services, `kafka-secure-test-${plainPort}`);
  kafkaSetup = saslSslListener(securePort, certificatesDirFor(kafkaDir));
  [kafka, redis] = await Promise.all([
    startKafka({
      cacheDir: defaultCacheDir(),
      port: plainPort,
      dataDir: kafkaDir,
      secure: kafkaSetup.listener,
    }),
    startRedis({
      port: redisPort,
      dataDir: join(services, `redis-secure-test-${redisPort}`),
      secure: { certificatesDir: join(services, `redis-secure-test-${redisPort}-tls`) },
    }),
  ]);
  secureBrokers = `127.0.0.1:${securePort}`;
  writeFileSync(join(secrets, 'kafka-password'), `${kafkaSetup.users[0]?.password ?? ''}\n`);
  writeFileSync(join(secrets, 'redis-password'), `${redis.user?.password ?? ''}\n`);
  // No total here: the launchers fail a start-up whose log goes quiet (startTimeoutMs), and
  // vitest's hook timeout is the hang guard.
});

afterAll(async () => {
  await Promise.allSettled([kafka?.stop(), redis?.stop()]);
});

function secureKafkaConnection(passwordFile: string): Record<string, unknown> {
  return {
    brokers: [secureBrokers],
    tls: { caFile: kafkaSetup.certificates.caFile },
    sasl: { mechanism: 'scram-sha-512', username: kafkaSetup.users[0]?.name, passwordFile },
  };
}

describe('Kafka over SASL_SSL (TLS + SCRAM-SHA-512)', () => {
  it('runs a Kafka -> classifier -> Kafka route over the secured listener', async () => {
    const user = kafkaSetup.users[0];
    if (user === undefined) throw new Error('no Kafka user');
    const kit = new KafkaKit(secureBrokers, {
      ssl: { ca: readFileSync(kafkaSetup.certificates.caFile, 'utf8') },
      sasl: { mechanism: 'scram-sha-512', username: user.name, password: user.password },
    });
    const input = uniqueName('secure-in');
    const output = uniqueName('secure-out');
    await kit.createTopics([
      { topic: input, partitions: 2 },
      { topic: output, partitions: 1 },
    ]);
    const records = corpusRecords(300);
    await kit.produce(
      input,
      records.map((r, i) => ({ partition: i % 2, key: r.id, value: JSON.stringify(r) })),
    );
    const raw = kafkaRouteConfig({
      brokers: secureBrokers,
      input,
      output,
      groupId: uniqueName('g'),
    });
    raw['connections'] = { kafka: secureKafkaConnection(join(secrets, 'kafka-password')) };
    const worker = await StreamWorker.start(configSchema.parse(raw), { logger: silentLogger });
    try {
      const outputs = await kit.readAll(output, { count: records.length, quietMs: 300 });
      const ids = new Set(
        outputs.map((o) => (JSON.parse(o.value.toString()) as { id: string }).id),
      );
      expect(ids.size).toBe(records.length);
      const one = JSON.parse(outputs[0]?.value.toString() ?? '{}') as {
        result?: { label: string }[];
      };
      expect(one.result?.[0]?.label).toEqual(expect.any(String));
    } finally {
      await worker.stop(20_000);
    }
  });

  it('a wrong password stops start-up with an error naming connections.kafka.sasl, and no password in the output', async () => {
    const wrong = 'WrongKafkaPassword42';
    writeFileSync(join(secrets, 'kafka-wrong'), wrong);
    const raw = kafkaRouteConfig({
      brokers: secureBrokers,
      input: uniqueName('never'),
      output: uniqueName('never-out'),
      groupId: uniqueName('g'),
    });
    raw['connections'] = { kafka: secureKafkaConnection(join(secrets, 'kafka-wrong')) };
    await expect(
      StreamWorker.start(configSchema.parse(raw), { logger: silentLogger }),
    ).rejects.toSatisfy(
      (err: unknown) => err instanceof ConnectionError && err.field === 'connections.kafka.sasl',
    );
    const proc = startWorkerProcess(raw);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toMatch(
      /connections\.kafka: the brokers .* refused the SASL SCRAM-SHA-512 login/,
    );
    expect(proc.output()).not.toContain(wrong);
  });
});

describe('Redis over TLS with an ACL user', () => {
  function redisConnection(passwordFile: string): Record<string, unknown> {
    return {
      url: redis.url,
      username: redis.user?.name,
      passwordFile,
      tls: { caFile: redis.certificates?.caFile },
    };
  }

  it('runs a Redis Streams route over TLS as the ACL user', async () => {
    const client = new Redis(redis.url, {
      tls: { ca: readFileSync(redis.certificates?.caFile ?? '') },
      username: redis.user?.name ?? '',
      password: redis.user?.password ?? '',
    });
    const input = uniqueName('secure-stream-in');
    const output = uniqueName('secure-stream-out');
    try {
      const records = corpusRecords(200);
      for (const r of records) await client.xadd(input, '*', 'value', JSON.stringify(r));
      const config = workerConfig(redis.url, {
        source: { type: 'redis-stream', stream: input, group: 'g' },
        sink: { type: 'redis-stream', stream: output },
      });
      config.connections.redis = configSchema.shape.connections.parse({
        redis: redisConnection(join(secrets, 'redis-password')),
      }).redis;
      const worker = await StreamWorker.start(config, { logger: silentLogger });
      try {
        await waitForProgress(() => client.xlen(output), {
          what: `${records.length} outputs over TLS in ${output}`,
          done: (n) => n >= records.length,
          // The worker in this process loads its model and joins its group first.
          firstProgressMs: 120_000,
        });
      } finally {
        await worker.stop(20_000);
      }
      expect(await client.xlen(output)).toBe(records.length);
      const [entry] = await client.xrange(output, '-', '+', 'COUNT', 1);
      const value = JSON.parse(entry?.[1][1] ?? '{}') as { result?: { label: string }[] };
      expect(value.result?.[0]?.label).toEqual(expect.any(String));
      // The default user is off: a client without the ACL user is refused.
      const anonymous = new Redis(redis.url, {
        tls: { ca: readFileSync(redis.certificates?.caFile ?? '') },
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      anonymous.on('error', () => undefined);
      await anonymous.connect().catch(() => undefined);
      await expect(anonymous.ping()).rejects.toThrow(/NOAUTH|Connection is closed/);
      anonymous.disconnect();
    } finally {
      await client.del(input, output);
      client.disconnect();
    }
  });

  it('a wrong password stops start-up with an error naming connections.redis, and no password in the output', async () => {
    const wrong = 'wrong-redis-password-42';
    writeFileSync(join(secrets, 'redis-wrong'), wrong);
    const config = workerConfig(redis.url, {
      source: { type: 'redis-stream', stream: uniqueName('never'), group: 'g' },
      sink: { type: 'redis-stream', stream: uniqueName('never-out') },
    }) as unknown as Record<string, unknown>;
    const raw = {
      ...config,
      connections: { redis: redisConnection(join(secrets, 'redis-wrong')) },
    };
    const proc = startWorkerProcess(raw);
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toMatch(
      /connections\.redis: Redis at rediss:\/\/127\.0\.0\.1:\d+ refused the connection: WRONGPASS/,
    );
    expect(proc.output()).not.toContain(wrong);
  });
});
