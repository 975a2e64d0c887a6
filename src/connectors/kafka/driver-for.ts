// The Kafka driver of a worker (connectors/connections.ts owns the one instance):
// connections.kafka.client picks the library. What a delivery mode would like and the client
// cannot do is said once, when the driver is made, with what the driver does instead.
import type { KafkaConnectionConfig, kafkaClients } from '../../config/connection-schema.ts';
import type { WorkerConfig } from '../../config/schema.ts';
import type { Logger } from '../../logger.ts';
import type { DriverFeatures, KafkaDriver } from './driver.ts';
import type { KafkaSecurity } from './kafka-security.ts';
import { KafkajsDriver } from './kafkajs-driver.ts';
import { PlatformaticDriver } from './platformatic-driver.ts';

type KafkaClient = (typeof kafkaClients)[number];

export function createKafkaDriver(
  kafka: KafkaConnectionConfig,
  security: KafkaSecurity,
  mode: WorkerConfig['delivery']['mode'],
  logger: Logger,
): KafkaDriver {
  const common = {
    brokers: kafka.brokers,
    clientId: kafka.clientId,
    logger,
    security,
    connection: kafka,
    connectionTimeoutMs: kafka.connectionTimeoutMs,
  };
  const driver =
    clientOf(kafka) === 'platformatic'
      ? new PlatformaticDriver(common)
      : new KafkajsDriver({ ...common, authenticationTimeoutMs: kafka.authenticationTimeoutMs });
  for (const note of fallbacksOf(mode, driver.features))
    logger.warn({ client: driver.features.client, mode }, note);
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
  return clientOf(config.connections.kafka);
}

function clientOf(kafka: KafkaConnectionConfig | undefined): KafkaClient {
  return kafka?.client ?? 'platformatic';
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
