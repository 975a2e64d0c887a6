// Writer schemas by id, each fetched once with the schemas it references (followed to the end,
// each subject version once) and made into a codec; every record written with the same schema
// shares the one fetch, also while it is still in flight, so a burst of records with a new id
// costs one request. Fetches wait out registry outages (registry-outage.ts); a record that is
// given up meanwhile stops waiting without cancelling the fetch the others wait for.
import { ClosedError, SchemaDecodeError } from '../errors.ts';
import type { RegistryOutage } from './registry-outage.ts';
import type { RegistrySchema, SchemaRegistry } from './registry-client.ts';
import { codecFor, type ResolvedSchema, type SchemaCodec } from './schema-codec.ts';

export interface WriterSchema {
  id: number;
  resolved: ResolvedSchema;
  codec: SchemaCodec;
}

export class WriterSchemas {
  private readonly registry: SchemaRegistry;
  private readonly outage: RegistryOutage;
  private readonly byId = new Map<number, Promise<WriterSchema>>();
  private readonly versions = new Map<string, Promise<RegistrySchema>>();
  private readonly capacity: number;

  constructor(registry: SchemaRegistry, outage: RegistryOutage, capacity = 1000) {
    this.registry = registry;
    this.outage = outage;
    this.capacity = capacity;
  }

  /** The schema a record was written with; SchemaUnknownError for an id the registry lacks. */
  schema(id: number, signal?: AbortSignal): Promise<WriterSchema> {
    let found = this.byId.get(id);
    if (found === undefined) {
      found = this.fetch(id);
      // A failure (an unknown id, a refusal) is not kept: the next record asks again.
      found.catch(() => this.byId.delete(id));
      if (this.byId.size >= this.capacity) {
        const oldest = this.byId.keys().next().value;
        if (oldest !== undefined) this.byId.delete(oldest);
      }
      this.byId.set(id, found);
    }
    return untilAborted(found, signal);
  }

  private async fetch(id: number): Promise<WriterSchema> {
    const schema = await this.outage.call(() => this.registry.schemaById(id));
    const resolved = await this.resolve(schema);
    try {
      return { id, resolved, codec: codecFor(resolved) };
    } catch (err) {
      throw new SchemaDecodeError(
        `schema id ${id} (${schema.schemaType}) cannot be read: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
  }

  /** The schema with its references, each once, dependencies first. */
  async resolve(schema: RegistrySchema): Promise<ResolvedSchema> {
    const references: RegistrySchema[] = [];
    const referenceNames: string[] = [];
    const seen = new Set<string>();
    const visit = async (of: RegistrySchema): Promise<void> => {
      for (const reference of of.references) {
        const key = `${reference.subject}\u0000${reference.version}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const referenced = await this.version(reference.subject, reference.version);
        await visit(referenced);
        references.push(referenced);
        referenceNames.push(reference.name);
      }
    };
    await visit(schema);
    return { schema, references, referenceNames };
  }

  private version(subject: string, version: number): Promise<RegistrySchema> {
    const key = `${subject}\u0000${version}`;
    let found = this.versions.get(key);
    if (found === undefined) {
      found = this.outage.call(() => this.registry.version(subject, version));
      found.catch(() => this.versions.delete(key));
      this.versions.set(key, found);
    }
    return found;
  }
}

/** The promise, or a ClosedError as soon as the signal aborts. */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted)
    return Promise.reject(
      new ClosedError('the record was given up while it waited for its schema'),
    );
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void =>
      reject(new ClosedError('the record was given up while it waited for its schema'));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}
