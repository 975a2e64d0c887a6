// One Kafka client per worker config, shared by its sources and sinks.
import type { WorkerConfig } from '../../config/schema.ts';
import type { Environment } from '../../config/secrets.ts';
import { ConfigError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { KafkaDriver } from './driver.ts';
import { kafkaSecurityOf } from './kafka-security.ts';
import { KafkajsDriver } from './kafkajs-driver.ts';

const drivers = new WeakMap<WorkerConfig, KafkaDriver>();

export function kafkaDriverFor(
  config: WorkerConfig,
  logger: Logger,
  env: Environment = process.env,
): KafkaDriver {
  const known = drivers.get(config);
  if (known !== undefined) return known;
  const kafka = config.connections.kafka;
  if (kafka === undefined)
    throw new ConfigError(
      'a Kafka source or sink needs connections.kafka.brokers (for example [localhost:9092])',
      { field: 'connections.kafka' },
    );
  const driver = new KafkajsDriver({
    brokers: kafka.brokers,
    clientId: kafka.clientId,
    logger,
    security: kafkaSecurityOf(kafka, env),
    connection: kafka,
    connectionTimeoutMs: kafka.connectionTimeoutMs,
    authenticationTimeoutMs: kafka.authenticationTimeoutMs,
  });
  drivers.set(config, driver);
  return driver;
}
