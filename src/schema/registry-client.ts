// The Schema Registry as the worker uses it: a schema by id, a subject's version, registering a
// derived schema after a compatibility check. Behind it is Confluent's client
// (@confluentinc/schemaregistry: several base URLs, Basic and bearer auth, LRU caches of ids and
// registrations); this file only gives its failures the meanings the worker acts on: a 404 is the
// record's problem (SchemaUnknownError), a refusal of a schema is the output's
// (SchemaRefusedError), everything else is an outage (RegistryUnavailableError) that waits.
import { Agent } from 'node:https';
import { checkServerIdentity } from 'node:tls';
import {
  SchemaRegistryClient,
  type SchemaInfo,
} from '@confluentinc/schemaregistry/dist/schemaregistry-client.js';
import {
  ConnectionError,
  RegistryUnavailableError,
  SchemaRefusedError,
  SchemaUnknownError,
} from '../errors.ts';
import { redactText } from '../redaction.ts';
import type { RegistryTarget } from './registry-target.ts';

export type SchemaType = 'AVRO' | 'PROTOBUF' | 'JSON';

export interface SchemaReference {
  /** How the schema names it: an Avro full name, a Protobuf import path, a JSON Schema $ref URL. */
  name: string;
  subject: string;
  version: number;
}

export interface RegistrySchema {
  schemaType: SchemaType;
  schema: string;
  references: SchemaReference[];
}

export interface RegisteredVersion extends RegistrySchema {
  id: number;
  subject: string;
  version: number;
}

/** What the worker asks of a registry; unit tests pass a fake. */
export interface SchemaRegistry {
  /** The writer's schema of a record. SchemaUnknownError when the id is not registered. */
  schemaById(id: number): Promise<RegistrySchema>;
  /** A subject's version (a reference, or output.schema {subject, version}). */
  version(subject: string, version: number | 'latest'): Promise<RegisteredVersion>;
  /** Registers (or finds) a schema under the subject after checking its compatibility; its id. */
  register(subject: string, schema: RegistrySchema): Promise<number>;
  /** A cheap request that proves the registry answers and accepts the credentials. */
  ping(): Promise<void>;
  /** A name for logs and /readyz (the first URL, redacted). */
  readonly name: string;
}

export class ConfluentSchemaRegistry implements SchemaRegistry {
  readonly name: string;
  private readonly client: SchemaRegistryClient;

  constructor(target: RegistryTarget) {
    this.name = `Schema Registry at ${target.urls.map(redactText).join(',')}`;
    const headers: Record<string, string> = {};
    if (target.bearer !== undefined) headers['Authorization'] = `Bearer ${target.bearer}`;
    const tls = target.tls;
    this.client = new SchemaRegistryClient({
      baseURLs: target.urls,
      cacheCapacity: target.cacheCapacity,
      // Outages are retried by the worker, with backoff and /readyz saying why, not inside a call.
      maxRetries: 0,
      createAxiosDefaults: {
        timeout: target.requestTimeoutMs,
        headers: { common: headers },
        ...(tls === undefined
          ? {}
          : {
              httpsAgent: new Agent({
                keepAlive: true,
                ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
                ...(tls.cert !== undefined ? { cert: tls.cert } : {}),
                ...(tls.key !== undefined ? { key: tls.key } : {}),
                ...(tls.passphrase !== undefined ? { passphrase: tls.passphrase } : {}),
                ...(tls.servername !== undefined ? { servername: tls.servername } : {}),
                rejectUnauthorized: tls.rejectUnauthorized,
                checkServerIdentity: tls.checkHostname ? checkServerIdentity : () => undefined,
              }),
            }),
      },
      ...(target.basic !== undefined
        ? { basicAuthCredentials: { credentialsSource: 'USER_INFO', userInfo: target.basic } }
        : {}),
    });
  }

  async schemaById(id: number): Promise<RegistrySchema> {
    try {
      return toSchema(await this.client.getBySubjectAndId('', id));
    } catch (err) {
      if (statusOf(err) === 404)
        throw new SchemaUnknownError(
          `schema id ${id} is not in the Schema Registry (${messageOf(err)}); the record was written with a schema this registry does not hold`,
          { cause: err },
        );
      throw this.outage(err, `reading schema id ${id}`);
    }
  }

  async version(subject: string, version: number | 'latest'): Promise<RegisteredVersion> {
    try {
      const found =
        version === 'latest'
          ? await this.client.getLatestSchemaMetadata(subject)
          : await this.client.getSchemaMetadata(subject, version, false);
      return {
        ...toSchema(found),
        id: found.id ?? 0,
        subject,
        version: found.version ?? (version === 'latest' ? 0 : version),
      };
    } catch (err) {
      if (statusOf(err) === 404)
        throw new SchemaRefusedError(
          `subject ${subject} has no version ${version} in the Schema Registry (${messageOf(err)})`,
          { cause: err },
        );
      throw this.outage(err, `reading ${subject} version ${version}`);
    }
  }

  async register(subject: string, schema: RegistrySchema): Promise<number> {
    const info: SchemaInfo = {
      schema: schema.schema,
      schemaType: schema.schemaType,
      references: schema.references,
    };
    try {
      // A subject without versions (404) takes any first schema.
      const compatible = await this.client
        .testSubjectCompatibility(subject, info)
        .catch((err: unknown) => {
          if (statusOf(err) === 404) return true;
          throw err;
        });
      if (!compatible)
        throw new SchemaRefusedError(
          `the derived output schema is not compatible with subject ${subject}'s registered versions under its compatibility rule; set a compatibility the change fits, or give output.schema {subject, version}`,
        );
      return await this.client.register(subject, info);
    } catch (err) {
      if (err instanceof SchemaRefusedError) throw err;
      const status = statusOf(err);
      if (status === 409 || status === 422)
        throw new SchemaRefusedError(
          `the Schema Registry refused the output schema under subject ${subject}: ${messageOf(err)}`,
          { cause: err },
        );
      throw this.outage(err, `registering under ${subject}`);
    }
  }

  async ping(): Promise<void> {
    try {
      await this.client.getDefaultCompatibility();
    } catch (err) {
      const status = statusOf(err);
      // Credentials a wait cannot cure: a config change is needed (exit 2, not a wait).
      if (status === 401 || status === 403)
        throw new ConnectionError(
          `${this.name} refused the credentials (HTTP ${status}); check connections.schemaRegistry.auth`,
          { cause: err, field: 'connections.schemaRegistry.auth' },
        );
      // A registry without the config endpoint still answers.
      if (status === 404) return;
      throw this.outage(err, 'asking its default compatibility');
    }
  }

  private outage(err: unknown, doing: string): RegistryUnavailableError {
    const status = statusOf(err);
    const why =
      status === 401 || status === 403
        ? `refused the credentials (HTTP ${status}); check connections.schemaRegistry.auth`
        : messageOf(err);
    return new RegistryUnavailableError(`${this.name} did not answer ${doing}: ${why}`, {
      cause: err,
    });
  }
}

function toSchema(info: SchemaInfo): RegistrySchema {
  const type = (info.schemaType ?? 'AVRO').toUpperCase();
  return {
    schemaType: type === 'PROTOBUF' || type === 'JSON' ? type : 'AVRO',
    schema: info.schema,
    references: (info.references ?? []).map(({ name, subject, version }) => ({
      name,
      subject,
      version,
    })),
  };
}

/** The HTTP status of a RestError (or an axios error that kept its response). */
function statusOf(err: unknown): number | undefined {
  const e = err as { status?: unknown; response?: { status?: unknown } } | null;
  const status = e?.status ?? e?.response?.status;
  return typeof status === 'number' ? status : undefined;
}

const messageOf = (err: unknown): string =>
  redactText(err instanceof Error ? err.message : String(err));
