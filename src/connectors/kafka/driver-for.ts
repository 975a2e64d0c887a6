// One Kafka client per worker config, shared by its sources and sinks: connections.kafka.client
// picks the library. What a delivery mode would like and the client cannot do is said once, at
// start-up, with what the driver does instead.
import type { kafkaClients } from '../../config/connection-schema.ts';
import type { WorkerConfig } from '../../config/schema.ts';
import type { Environment } from '../../config/secrets.ts';
import { ConfigError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import type { DriverFeatures, KafkaDriver } from './driver.ts';
import { kafkaSecurityOf } from './kafka-security.ts';
import { KafkajsDriver } from './kafkajs-driver.ts';
import { PlatformaticDriver } from './platformatic-driver.ts';

type KafkaClient = (typeof kafkaClients)[number];

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
  const common = {
    brokers: kafka.brokers,
    clientId: kafka.clientId,
    logger,
    security: kafkaSecurityOf(kafka, env),
    connection: kafka,
    connectionTimeoutMs: kafka.connectionTimeoutMs,
  };
  const client = kafkaClientFor(config);
  const driver =
    client === 'platformatic'
      ? new PlatformaticDriver(common)
      : new KafkajsDriver({ ...common, authenticationTimeoutMs: kafka.authenticationTimeoutMs });
  for (const note of fallbacksOf(config.delivery.mode, driver.features))
    logger.warn({ client: driver.features.client, mode: config.delivery.mode }, note);
  drivers.set(config, driver);
  return driver;
}

/**
 * The client a worker uses: the one the config names, else @platformatic/kafka (maintained, keeps
 * the lanes of partitions a rebalance leaves in place, stable offsets and generation-fenced
 * transactional offsets) in both delivery modes. Exactly-once was on kafkajs until the race behind
 * one re-delivered transaction (a partition given back to its member mid-transaction) was fixed in
 * assigned-lanes.ts and ten exactly-once kill -9 runs in a row had 0 duplicates
 * (docs/sources-and-sinks.md#which-client).
 */
export function kafkaClientFor(config: WorkerConfig): KafkaClient {
  return config.connections.kafka?.client ?? 'platformatic';
}

/** What the delivery mode would use and this client lacks, with the fallback in use. */
export function fallbacksOf(
  mode: WorkerConfig['delivery']['mode'],
  features: DriverFeatures,
): string[] {
  const notes: string[] = [];
  const other = features.client === 'kafkajs' ? 'platformatic' : 'kafkajs';
  if (!features.keepsPartitions)
    notes.push(
      `connections.kafka.client ${features.client} restarts every partition at each rebalance: records in flight on kept partitions are read again (set client: ${other} to keep them)`,
    );
  if (mode === 'exactly-once' && !features.stableOffsets)
    notes.push(
      `exactly-once with connections.kafka.client ${features.client}: no stable offset reads (KIP-447), so a new partition owner polls its committed offset until two reads agree`,
    );
  if (mode === 'exactly-once' && !features.fencesByGeneration)
    notes.push(
      `exactly-once with connections.kafka.client ${features.client}: transactional offsets carry no group generation (KIP-447); zombies are fenced by the per-partition transactional ids alone`,
    );
  return notes;
}
