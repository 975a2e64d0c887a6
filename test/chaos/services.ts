// The chaos suite's own Kafka broker and Redis server, started by the project's launchers on fixed
// ports (CHAOS_KAFKA_PORT, CHAOS_REDIS_PORT) so that scenarios can stop and restart them on the
// same data: a restart is the point of several scenarios, so the suite never borrows a shared one.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import {
  defaultCacheDir,
  startKafka,
  type LocalKafka,
} from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { startRedis, type LocalRedis } from '../../scripts/services/redis-local.ts';

export class ChaosServices {
  readonly kafkaPort: number;
  readonly redisPort: number;
  private readonly kafkaDir: string;
  private readonly redisDir: string;
  private kafka: LocalKafka | undefined;
  private redis: LocalRedis | undefined;

  private constructor(kafkaPort: number, redisPort: number) {
    this.kafkaPort = kafkaPort;
    this.redisPort = redisPort;
    this.kafkaDir = join(defaultCacheDir(), 'services', `chaos-kafka-${kafkaPort}`);
    this.redisDir = join(defaultCacheDir(), 'services', `chaos-redis-${redisPort}`);
  }

  static async start(ports: { kafka?: number; redis?: number }): Promise<ChaosServices> {
    const services = new ChaosServices(
      ports.kafka ?? (await freePort()),
      ports.redis ?? (await freePort()),
    );
    rmSync(services.redisDir, { recursive: true, force: true });
    await services.startKafka(false);
    await services.startRedis();
    return services;
  }

  get brokers(): string {
    return `127.0.0.1:${this.kafkaPort}`;
  }

  get redisUrl(): string {
    return `redis://127.0.0.1:${this.redisPort}`;
  }

  /** Stops the broker (SIGTERM, then SIGKILL after its grace), keeping its data. */
  async stopKafka(): Promise<void> {
    await this.kafka?.stop();
    this.kafka = undefined;
  }

  /** Starts the broker; `keepData` brings back the same topics, offsets and transactions. */
  async startKafka(keepData = true): Promise<void> {
    this.kafka = await startKafka({
      cacheDir: defaultCacheDir(),
      port: this.kafkaPort,
      dataDir: this.kafkaDir,
      keepData,
      heapMb: 1024,
      startTimeoutMs: 180_000,
    });
  }

  async stopRedis(): Promise<void> {
    await this.redis?.stop();
    this.redis = undefined;
  }

  /** Redis with an fsynced append-only file, so that a restart keeps every stream entry. */
  async startRedis(): Promise<void> {
    this.redis = await startRedis({
      port: this.redisPort,
      dataDir: this.redisDir,
      persistent: true,
      startTimeoutMs: 60_000,
    });
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.stopKafka(), this.stopRedis()]);
    rmSync(this.kafkaDir, { recursive: true, force: true });
    rmSync(this.redisDir, { recursive: true, force: true });
  }
}
