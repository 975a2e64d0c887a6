// The worker's connections, resolved once from connections.*: secrets and certificate files are
// read here and nowhere else, and each client is created by its owner, this object, and shared
// by every route that names it. The Kafka driver is created on first use (a config without Kafka
// routes never builds one); exactly-once needs every Kafka end of the worker on the same driver,
// which is why there is one per worker and not one per route.
import type { KafkaConnectionConfig } from '../config/connection-schema.ts';
import type { WorkerConfig } from '../config/schema.ts';
import type { Environment } from '../config/secrets.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { KafkaDriver } from './kafka/driver.ts';
import { createKafkaDriver } from './kafka/driver-for.ts';
import { kafkaSecurityOf, type KafkaSecurity } from './kafka/kafka-security.ts';
import { redisTargetOf, type RedisTarget } from './redis/redis-connection.ts';
import { Backoff } from './backoff.ts';
import { RegistryConnection } from '../schema/registry-connection.ts';
import { registryTargetOf, type RegistryTarget } from '../schema/registry-target.ts';

type DeliveryMode = WorkerConfig['delivery']['mode'];

export class Connections {
  private readonly kafkaConfig: KafkaConnectionConfig | undefined;
  private readonly kafkaSecurity: KafkaSecurity | undefined;
  private readonly redisTarget: RedisTarget | undefined;
  private readonly mode: DeliveryMode;
  private readonly logger: Logger;
  private driver: KafkaDriver | undefined;
  private readonly registryTarget: RegistryTarget | undefined;
  private registry: RegistryConnection | undefined;

  private constructor(config: WorkerConfig, logger: Logger, env: Environment) {
    const { kafka, redis, schemaRegistry } = config.connections;
    this.kafkaConfig = kafka;
    this.kafkaSecurity = kafka === undefined ? undefined : kafkaSecurityOf(kafka, env);
    this.redisTarget = redis === undefined ? undefined : redisTargetOf(redis, env);
    this.registryTarget =
      schemaRegistry === undefined ? undefined : registryTargetOf(schemaRegistry, env);
    this.mode = config.delivery.mode;
    this.logger = logger;
  }

  /**
   * Reads every secret variable and file of connections.* (a mistake is a ConfigError naming the
   * field, before anything connects); connects nothing.
   */
  static resolve(
    config: WorkerConfig,
    logger: Logger,
    env: Environment = process.env,
  ): Connections {
    return new Connections(config, logger, env);
  }

  /** The worker's Kafka driver; `field` names who asks, for the error when Kafka is not set up. */
  kafka(field: string): KafkaDriver {
    if (this.driver !== undefined) return this.driver;
    if (this.kafkaConfig === undefined || this.kafkaSecurity === undefined)
      throw new ConfigError(
        `${field}: a Kafka source or sink needs connections.kafka.brokers (for example [localhost:9092])`,
        { field: 'connections.kafka' },
      );
    this.driver = createKafkaDriver(this.kafkaConfig, this.kafkaSecurity, this.mode, this.logger);
    return this.driver;
  }

  /** Where Redis ends connect, with credentials and TLS resolved. */
  redis(field: string): RedisTarget {
    if (this.redisTarget === undefined)
      throw new ConfigError(
        `${field} uses Redis, but connections.redis is missing; add connections.redis.url`,
        { field: 'connections.redis' },
      );
    return this.redisTarget;
  }

  /** The worker's Schema Registry connection, made on first use and shared by every route. */
  schemaRegistry(field: string): RegistryConnection {
    if (this.registry !== undefined) return this.registry;
    if (this.registryTarget === undefined)
      throw new ConfigError(
        `${field} uses a Schema Registry format, but connections.schemaRegistry is missing; add connections.schemaRegistry.urls`,
        { field: 'connections.schemaRegistry' },
      );
    // Outages are retried soon at first: a registry blip should not hold records for long.
    this.registry = RegistryConnection.of(
      this.registryTarget,
      this.logger,
      () => new Backoff({ initialMs: 200, maxMs: 5_000 }),
    );
    return this.registry;
  }

  /** Ends every wait for the registry (the worker is stopping); nothing else to close. */
  closeSchemaRegistry(): void {
    this.registry?.close();
  }

  /** The brokers, for log lines and start-up waits; undefined without connections.kafka. */
  get kafkaBrokers(): readonly string[] | undefined {
    return this.kafkaConfig?.brokers;
  }
}
