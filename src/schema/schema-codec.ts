// A writer's (or an output's) schema made into a codec by its library: avsc for Avro, protobufjs
// for Protobuf, JSON for JSON Schema. A codec turns a payload (the bytes after the wire-format
// header) into a plain record the route's `input.field` paths read, and a record back into a
// payload. Referenced schemas come resolved, dependencies first.
import avro from 'avsc';
import protobuf from 'protobufjs';
import Ajv, { type ValidateFunction } from 'json-schema-ajv8';
import { SchemaDecodeError, SchemaRefusedError } from '../errors.ts';
import type { RegistrySchema } from './registry-client.ts';

export interface SchemaCodec {
  readonly schemaType: RegistrySchema['schemaType'];
  /** Protobuf: the message the record is (from its wire-format indexes); ignored otherwise. */
  decode(payload: Buffer, messageIndexes?: number[]): unknown;
  /** The payload of `value`; SchemaRefusedError when the schema does not take it. */
  encode(value: unknown, messageIndexes?: number[]): Buffer;
  /** Avro: the record type's full name (RecordNameStrategy); Protobuf: the message's. */
  recordName(messageIndexes?: number[]): string | undefined;
}

/** A schema and the schemas it references (each once, dependencies before dependents). */
export interface ResolvedSchema {
  schema: RegistrySchema;
  references: RegistrySchema[];
  /** Protobuf: the import name each reference was given. */
  referenceNames: string[];
}

export function codecFor(resolved: ResolvedSchema): SchemaCodec {
  switch (resolved.schema.schemaType) {
    case 'AVRO':
      return new AvroCodec(resolved);
    case 'PROTOBUF':
      return new ProtobufCodec(resolved);
    case 'JSON':
      return new JsonSchemaCodec(resolved.schema.schema);
  }
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

class AvroCodec implements SchemaCodec {
  readonly schemaType = 'AVRO' as const;
  private readonly type: avro.Type;

  constructor(resolved: ResolvedSchema) {
    // Named types of the references are known by name to the schemas that use them.
    const registry: Record<string, avro.Type> = {};
    for (const reference of resolved.references)
      avro.Type.forSchema(JSON.parse(reference.schema) as avro.Schema, { registry });
    this.type = avro.Type.forSchema(JSON.parse(resolved.schema.schema) as avro.Schema, {
      registry,
    });
  }

  decode(payload: Buffer): unknown {
    try {
      return this.type.fromBuffer(payload);
    } catch (err) {
      throw new SchemaDecodeError(
        `the record does not decode with its Avro writer schema: ${messageOf(err)}`,
        { cause: err },
      );
    }
  }

  encode(value: unknown): Buffer {
    const problems: string[] = [];
    const valid = this.type.isValid(value, {
      errorHook: (path: string[], found: unknown, type: avro.Type) =>
        problems.push(
          `${path.join('.') || '(the record)'} is ${describe(found)}, not ${typeName(type)}`,
        ),
    });
    if (!valid)
      throw new SchemaRefusedError(
        `the output does not fit its Avro schema: ${problems.slice(0, 3).join('; ')}`,
      );
    return this.type.toBuffer(value);
  }

  recordName(): string | undefined {
    return this.type.name;
  }
}

function typeName(type: avro.Type): string {
  return type.name ?? (type as { typeName?: string }).typeName ?? 'its type';
}

function describe(value: unknown): string {
  if (value === undefined) return 'missing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Uint8Array) return 'bytes';
  return `a ${typeof value}`;
}

/** The message types of a .proto file in declaration order, as message indexes address them. */
function messagesOf(namespace: protobuf.NamespaceBase): protobuf.Type[] {
  return namespace.nestedArray.filter((n): n is protobuf.Type => n instanceof protobuf.Type);
}

export class ProtobufCodec implements SchemaCodec {
  readonly schemaType = 'PROTOBUF' as const;
  /** The file's own top-level messages, in order (a reference's types share the root). */
  private readonly topLevel: protobuf.Type[];

  constructor(resolved: ResolvedSchema) {
    const options = { keepCase: true };
    // Parsed alone first: which top-level messages are this file's, in its order.
    const own = protobuf.parse(resolved.schema.schema, new protobuf.Root(), options);
    const names = ownMessageNames(own);
    const root = new protobuf.Root();
    for (const reference of resolved.references) protobuf.parse(reference.schema, root, options);
    const main = protobuf.parse(resolved.schema.schema, root, options);
    addWellKnownImports(root, main.imports ?? [], resolved.referenceNames);
    root.resolveAll();
    this.topLevel = names.map((name) => root.lookupType(name));
  }

  /** The message that wire-format indexes name (default [0], the first). */
  messageAt(indexes: number[] = [0]): protobuf.Type {
    let candidates = this.topLevel;
    let type: protobuf.Type | undefined;
    for (const index of indexes) {
      type = candidates[index];
      if (type === undefined)
        throw new SchemaDecodeError(
          `the record's Protobuf message indexes [${indexes.join(', ')}] name no message of its schema`,
        );
      candidates = messagesOf(type);
    }
    if (type === undefined) throw new SchemaDecodeError('the record names no Protobuf message');
    return type;
  }

  decode(payload: Buffer, messageIndexes?: number[]): unknown {
    const type = this.messageAt(messageIndexes);
    try {
      // Longs as strings and bytes as base64 keep every value exact and plain for field paths.
      return type.toObject(type.decode(payload), { longs: String, enums: String, bytes: String });
    } catch (err) {
      throw new SchemaDecodeError(
        `the record does not decode as Protobuf message ${type.fullName.slice(1)}: ${messageOf(err)}`,
        { cause: err },
      );
    }
  }

  encode(value: unknown, messageIndexes?: number[]): Buffer {
    const type = this.messageAt(messageIndexes);
    let message: protobuf.Message;
    try {
      message = type.fromObject(value as Record<string, unknown>);
    } catch (err) {
      throw new SchemaRefusedError(
        `the output does not fit Protobuf message ${type.fullName.slice(1)}: ${messageOf(err)}`,
        { cause: err },
      );
    }
    const problem = type.verify(message);
    if (problem !== null)
      throw new SchemaRefusedError(
        `the output does not fit Protobuf message ${type.fullName.slice(1)}: ${problem}`,
      );
    return Buffer.from(type.encode(message).finish());
  }

  recordName(messageIndexes?: number[]): string {
    return this.messageAt(messageIndexes).fullName.slice(1);
  }
}

function ownMessageNames(parsed: protobuf.IParserResult): string[] {
  let namespace: protobuf.NamespaceBase = parsed.root;
  if (parsed.package !== undefined)
    namespace = parsed.root.lookup(parsed.package) as protobuf.Namespace;
  return messagesOf(namespace).map((type) => type.fullName);
}

/** google/protobuf/*.proto imports the registry has no reference for: protobufjs ships them. */
function addWellKnownImports(root: protobuf.Root, imports: string[], given: string[]): void {
  for (const name of imports) {
    if (given.includes(name) || !name.startsWith('google/protobuf/')) continue;
    const common = protobuf.common.get(name);
    if (common !== null) root.addJSON(common.nested ?? {});
  }
}

/** Bytes (a compact vector) as base64 text, where JSON.stringify would write {type, data}. */
function base64Bytes(this: unknown, key: string, value: unknown): unknown {
  const raw = (this as Record<string, unknown>)[key];
  return raw instanceof Uint8Array
    ? Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('base64')
    : value;
}

/**
 * JSON Schema records are JSON text: they decode as JSON and encode as JSON. An output is checked
 * against the writer's schema before it is written (a given `{subject, version}` may refuse it);
 * ajv 8 (aliased: the dev tests keep ajv 6) compiles the schema once per codec. Unknown keywords
 * and formats are not errors, as the registry accepted the schema.
 */
class JsonSchemaCodec implements SchemaCodec {
  readonly schemaType = 'JSON' as const;
  private readonly title: string | undefined;
  private readonly validate: ValidateFunction;

  constructor(schema: string) {
    const parsed = JSON.parse(schema) as { title?: unknown };
    this.title = typeof parsed.title === 'string' ? parsed.title : undefined;
    this.validate = new Ajv.default({ strict: false, validateFormats: false }).compile(parsed);
  }

  decode(payload: Buffer): unknown {
    try {
      return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload)) as unknown;
    } catch (err) {
      throw new SchemaDecodeError(
        `the record's JSON Schema payload is not JSON: ${messageOf(err)}`,
        {
          cause: err,
        },
      );
    }
  }

  encode(value: unknown): Buffer {
    const text = JSON.stringify(value, base64Bytes);
    // Checked as a consumer will read it: bytes as base64 text, not as the Buffer.
    if (!this.validate(JSON.parse(text)))
      throw new SchemaRefusedError(
        `the output does not fit its JSON Schema: ${(this.validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`).join('; ')}`,
      );
    return Buffer.from(text);
  }

  /** The schema's title: what Confluent's RecordNameStrategy names a JSON Schema by. */
  recordName(): string | undefined {
    return this.title;
  }
}
