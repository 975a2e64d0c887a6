// A Schema Registry for unit tests: Confluent's own in-memory client (the one its serializers
// write through, so ids and bytes are the library's), behind the worker's SchemaRegistry
// interface; it can be taken down (every call an outage) and made to refuse compatibility.
import { MockClient } from '@confluentinc/schemaregistry/dist/mock-schemaregistry-client.js';
import {
  RegistryUnavailableError,
  SchemaRefusedError,
  SchemaUnknownError,
} from '../../../src/errors.ts';
import type {
  RegisteredVersion,
  RegistrySchema,
  SchemaRegistry,
} from '../../../src/schema/registry-client.ts';

export class FakeRegistry implements SchemaRegistry {
  readonly name = 'fake registry';
  readonly client = new MockClient({ baseURLs: ['mock://'] });
  /** Calls that fail as an outage before the registry answers again. */
  outageCalls = 0;
  compatible = true;
  calls = 0;
  readonly registered: { subject: string; schema: RegistrySchema; id: number }[] = [];

  private gate(): void {
    this.calls += 1;
    if (this.outageCalls > 0) {
      this.outageCalls -= 1;
      throw new RegistryUnavailableError('fake registry: connect ECONNREFUSED');
    }
  }

  async schemaById(id: number): Promise<RegistrySchema> {
    this.gate();
    try {
      const info = await this.client.getBySubjectAndId('', id);
      return {
        schemaType: (info.schemaType ?? 'AVRO') as RegistrySchema['schemaType'],
        schema: info.schema,
        references: info.references ?? [],
      };
    } catch (err) {
      throw new SchemaUnknownError(`schema id ${id} is not in the fake registry`, { cause: err });
    }
  }

  async version(subject: string, version: number | 'latest'): Promise<RegisteredVersion> {
    this.gate();
    const found =
      version === 'latest'
        ? await this.client.getLatestSchemaMetadata(subject)
        : await this.client.getSchemaMetadata(subject, version, false);
    return {
      schemaType: (found.schemaType ?? 'AVRO') as RegistrySchema['schemaType'],
      schema: found.schema,
      references: found.references ?? [],
      id: found.id ?? 0,
      subject,
      version: found.version ?? 0,
    };
  }

  async register(subject: string, schema: RegistrySchema): Promise<number> {
    this.gate();
    if (!this.compatible) throw new SchemaRefusedError(`not compatible with ${subject}`);
    const id = await this.client.register(subject, schema);
    this.registered.push({ subject, schema, id });
    return id;
  }

  ping(): Promise<void> {
    this.gate();
    return Promise.resolve();
  }
}
