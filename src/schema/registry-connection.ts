// The worker's one Schema Registry connection: the client, its outage state (what /readyz hears)
// and the writer schemas every route shares, made once by Connections and closed when the worker
// stops, which ends every wait for the registry.
import type { ConnectionHealth } from '../connectors/connection-health.ts';
import type { Logger } from '../logger.ts';
import { ConfluentSchemaRegistry, type SchemaRegistry } from './registry-client.ts';
import { RegistryOutage } from './registry-outage.ts';
import type { RegistryTarget } from './registry-target.ts';
import { WriterSchemas } from './writer-schemas.ts';

export class RegistryConnection {
  readonly registry: SchemaRegistry;
  readonly outage: RegistryOutage;
  readonly writers: WriterSchemas;
  private readonly listeners = new Set<(health: ConnectionHealth) => void>();

  constructor(registry: SchemaRegistry, logger: Logger, capacity = 1000) {
    this.registry = registry;
    this.outage = new RegistryOutage({
      logger,
      onHealth: (health) => {
        for (const listener of this.listeners) listener(health);
      },
    });
    this.writers = new WriterSchemas(registry, this.outage, capacity);
  }

  static of(target: RegistryTarget, logger: Logger): RegistryConnection {
    return new RegistryConnection(
      new ConfluentSchemaRegistry(target),
      logger,
      target.cacheCapacity,
    );
  }

  /** Hears outages and recoveries; returns the unsubscribe. */
  onHealth(listener: (health: ConnectionHealth) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  close(): void {
    this.outage.close();
  }
}
