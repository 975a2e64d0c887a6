// Where the integration tests find Kafka and Redis, in order of preference:
// 1. KAFKA_BROKERS / REDIS_URL point at services that already run;
// 2. a Docker engine answers: testcontainers starts throwaway containers;
// 3. otherwise the project's own launchers start local servers (Maven-built Kafka, Debian Redis).
import { join } from 'node:path';
import { getContainerRuntimeClient } from 'testcontainers';
import { startKafka } from '../../scripts/services/kafka-local.ts';
import { startRedis } from '../../scripts/services/redis-local.ts';
import { defaultCacheDir } from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';

export type ServiceOrigin = 'environment' | 'testcontainers' | 'local';

export interface ResolvedService {
  address: string;
  origin: ServiceOrigin;
  startupMs: number;
  stop: () => Promise<void>;
}

const KAFKA_IMAGE = 'confluentinc/cp-kafka:7.9.1';
const REDIS_IMAGE = 'redis:7.4';

let dockerAnswer: Promise<boolean> | undefined;
function dockerAvailable(): Promise<boolean> {
  dockerAnswer ??= getContainerRuntimeClient().then(
    () => true,
    () => false,
  );
  return dockerAnswer;
}

const nothingToStop = (): Promise<void> => Promise.resolve();

export async function resolveKafka(): Promise<ResolvedService> {
  const started = Date.now();
  const fromEnv = process.env['KAFKA_BROKERS'];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { address: fromEnv, origin: 'environment', startupMs: 0, stop: nothingToStop };
  }
  if (await dockerAvailable()) {
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const container = await new KafkaContainer(KAFKA_IMAGE).withKraft().start();
    return {
      address: `${container.getHost()}:${container.getMappedPort(9093)}`,
      origin: 'testcontainers',
      startupMs: Date.now() - started,
      stop: () => container.stop().then(() => undefined),
    };
  }
  const port = await freePort();
  const kafka = await startKafka({
    cacheDir: defaultCacheDir(),
    port,
    dataDir: join(defaultCacheDir(), 'services', `kafka-test-${port}`),
  });
  return {
    address: kafka.brokers.join(','),
    origin: 'local',
    startupMs: Date.now() - started,
    stop: kafka.stop,
  };
}

export async function resolveRedis(): Promise<ResolvedService> {
  const started = Date.now();
  const fromEnv = process.env['REDIS_URL'];
  if (fromEnv !== undefined && fromEnv !== '') {
    return { address: fromEnv, origin: 'environment', startupMs: 0, stop: nothingToStop };
  }
  if (await dockerAvailable()) {
    const { RedisContainer } = await import('@testcontainers/redis');
    const container = await new RedisContainer(REDIS_IMAGE)
      .withCommand(['redis-server', '--maxmemory-policy', 'noeviction'])
      .start();
    return {
      address: container.getConnectionUrl(),
      origin: 'testcontainers',
      startupMs: Date.now() - started,
      stop: () => container.stop().then(() => undefined),
    };
  }
  const port = await freePort();
  const redis = await startRedis({
    port,
    dataDir: join(defaultCacheDir(), 'services', `redis-test-${port}`),
  });
  return { address: redis.url, origin: 'local', startupMs: Date.now() - started, stop: redis.stop };
}
