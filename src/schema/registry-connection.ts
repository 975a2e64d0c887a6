// The worker's one Schema Registry connection: the client, its outage state (what /readyz hears)
// and the writer schemas every route shares, made once by Connections and closed when the worker
// stops, which ends every wait for the registry.
import type { Logger } from '../logger.ts';
import { ConfluentSchemaRegistry, type SchemaRegistry } from './registry-client.ts';
import { RegistryOutage, type RegistryHealth, type RetryDelays } from './registry-outage.ts';
import type { RegistryTarget } from './registry-target.ts';
import { WriterSchemas } from './writer-schemas.ts';

export class RegistryConnection {
  readonly registry: SchemaRegistry;
  readonly outage: RegistryOutage;
  readonly writers: WriterSchemas;
  private readonly listeners = new Set<(health: RegistryHealth) => void>();

  constructor(
    registry: SchemaRegistry,
    logger: Logger,
    options: { backoff: () => RetryDelays; capacity?: number },
  ) {
    this.registry = registry;
    this.outage = new RegistryOutage({
      logger,
      backoff: options.backoff,
      onHealth: (health) => {
        for (const listener of this.listeners) listener(health);
      },
    });
    this.writers = new WriterSchemas(registry, this.outage, options.capacity);
  }

  static of(
    target: RegistryTarget,
    logger: Logger,
    backoff: () => RetryDelays,
  ): RegistryConnection {
    return new RegistryConnection(new ConfluentSchemaRegistry(target), logger, {
      backoff,
      capacity: target.cacheCapacity,
    });
  }

  /** Hears outages and recoveries; returns the unsubscribe. */
  onHealth(listener: (health: RegistryHealth) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.outage.close();
  }
}
