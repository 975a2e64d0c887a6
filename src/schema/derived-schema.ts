// A derived output schema: the input's writer schema with the output field added, in the
// writer's own format. Avro: a field `["null", T]` with default null; JSON Schema: a property;
// Protobuf: a field numbered after the message's highest (its nested message types added inside
// the message, the rest of the .proto text untouched). The writer's references stay the derived
// schema's. An output field the input already has is replaced (output.overwrite) with the output
// type.
import { SchemaRefusedError } from '../errors.ts';
import type { OutputType } from './output-type.ts';
import type { RegistrySchema } from './registry-client.ts';
import { ProtobufCodec, type SchemaCodec } from './schema-codec.ts';

export interface DerivedSchema {
  schema: RegistrySchema;
  /** The output value as the derived schema holds it (Protobuf wraps nested lists). */
  adapt: (value: unknown) => unknown;
}

const same = (value: unknown): unknown => value;

export function deriveSchema(
  writer: { schema: RegistrySchema; codec: SchemaCodec },
  field: string,
  type: OutputType,
  messageIndexes: number[] = [0],
): DerivedSchema {
  if (field.includes('.'))
    throw new SchemaRefusedError(
      `output.schema derive adds a top-level field; output.field '${field}' is a path`,
    );
  switch (writer.schema.schemaType) {
    case 'AVRO':
      return {
        schema: { ...writer.schema, schema: deriveAvro(writer.schema.schema, field, type) },
        adapt: same,
      };
    case 'JSON':
      return {
        schema: { ...writer.schema, schema: deriveJsonSchema(writer.schema.schema, field, type) },
        adapt: same,
      };
    case 'PROTOBUF':
      return deriveProtobuf(writer.schema, writer.codec, field, type, messageIndexes);
  }
}

const pascal = (name: string): string =>
  name
    .split(/[^A-Za-z0-9]+/)
    .filter((p) => p !== '')
    .map((p) => p[0]?.toUpperCase() + p.slice(1))
    .join('') || 'Output';

const AVRO_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function deriveAvro(text: string, field: string, type: OutputType): string {
  const schema = JSON.parse(text) as { type?: unknown; fields?: { name: string }[] };
  if (schema.type !== 'record' || !Array.isArray(schema.fields))
    throw new SchemaRefusedError(
      "output.schema derive needs an Avro record as the input's schema; give output.schema {subject, version}",
    );
  const added = { name: field, ...avroOptional(type, pascal(field)) };
  checkAvroName(field);
  const fields = schema.fields.filter((f) => f.name !== field);
  return JSON.stringify({ ...schema, fields: [...fields, added] });
}

function checkAvroName(name: string): void {
  if (!AVRO_NAME.test(name))
    throw new SchemaRefusedError(
      `'${name}' is not an Avro field name ([A-Za-z_][A-Za-z0-9_]*), so the derived schema cannot hold it`,
    );
}

function avroOptional(type: OutputType, name: string): { type: unknown; default: null } {
  const inner = avroOf(type, name);
  return { type: inner === 'null' ? 'null' : ['null', inner], default: null };
}

function avroOf(type: OutputType, name: string): unknown {
  switch (type.kind) {
    case 'floats':
      return { type: 'array', items: 'float' };
    case 'bytes':
      return 'bytes';
    case 'array':
      return {
        type: 'array',
        items:
          type.items.kind === 'unknown'
            ? { type: 'record', name: `${name}Item`, namespace: 'hugot.output', fields: [] }
            : avroOf(type.items, `${name}Item`),
      };
    case 'record':
      return {
        type: 'record',
        name,
        namespace: 'hugot.output',
        fields: type.fields.map(([key, t]) => {
          checkAvroName(key);
          return { name: key, ...avroOptional(t, `${name}${pascal(key)}`) };
        }),
      };
    case 'string':
    case 'double':
    case 'boolean':
      return type.kind;
    case 'unknown':
      return 'null';
  }
}

function deriveJsonSchema(text: string, field: string, type: OutputType): string {
  const schema = JSON.parse(text) as { type?: unknown; properties?: Record<string, unknown> };
  if (schema.type !== 'object' && schema.properties === undefined)
    throw new SchemaRefusedError(
      "output.schema derive needs a JSON Schema of an object as the input's schema; give output.schema {subject, version}",
    );
  return JSON.stringify({ ...schema, properties: { ...schema.properties, [field]: jsonOf(type) } });
}

function jsonOf(type: OutputType): unknown {
  switch (type.kind) {
    case 'floats':
      return { type: 'array', items: { type: 'number' } };
    case 'bytes':
      // JSON has no bytes: base64 text, as the route's JSON output writes a compact vector.
      return { type: 'string', contentEncoding: 'base64' };
    case 'array':
      return { type: 'array', items: jsonOf(type.items) };
    case 'record':
      return {
        type: 'object',
        properties: Object.fromEntries(type.fields.map(([key, t]) => [key, jsonOf(t)])),
      };
    case 'double':
      return { type: 'number' };
    case 'string':
    case 'boolean':
      return { type: type.kind };
    case 'unknown':
      return {};
  }
}

interface ProtoField {
  repeated: boolean;
  type: string;
  adapt: (value: unknown) => unknown;
}

/** Writes the output type as Protobuf field types, collecting the message types it needs. */
class ProtoWriter {
  readonly messages: string[] = [];

  field(type: OutputType, name: string): ProtoField {
    switch (type.kind) {
      case 'floats':
        return { repeated: true, type: 'float', adapt: same };
      case 'bytes':
        return { repeated: false, type: 'bytes', adapt: same };
      case 'string':
      case 'unknown':
        return { repeated: false, type: 'string', adapt: same };
      case 'double':
        return { repeated: false, type: 'double', adapt: same };
      case 'boolean':
        return { repeated: false, type: 'bool', adapt: same };
      case 'record': {
        const fields = type.fields.map(
          ([key, t]) => [key, this.field(t, `${name}${pascal(key)}`)] as const,
        );
        const body = fields
          .map(([key, f], i) => `${f.repeated ? 'repeated ' : ''}${f.type} ${key} = ${i + 1};`)
          .join(' ');
        this.messages.push(`message ${name} { ${body} }`);
        const adapt = (value: unknown): unknown => {
          if (value === null || typeof value !== 'object') return value;
          const record = value as Record<string, unknown>;
          return Object.fromEntries(
            fields.map(([key, f]) => [
              key,
              record[key] === undefined ? undefined : f.adapt(record[key]),
            ]),
          );
        };
        return { repeated: false, type: name, adapt };
      }
      case 'array': {
        const items = this.field(type.items, `${name}Item`);
        if (!items.repeated)
          return {
            repeated: true,
            type: items.type,
            adapt: (value) => (Array.isArray(value) ? value.map(items.adapt) : value),
          };
        // A list of lists: each inner list in a message of its own (Protobuf has no nesting of repeated).
        const wrapper = `${name}Item`;
        this.messages.push(`message ${wrapper} { repeated ${items.type} values = 1; }`);
        return {
          repeated: true,
          type: wrapper,
          adapt: (value) =>
            Array.isArray(value) ? value.map((v) => ({ values: items.adapt(v) })) : value,
        };
      }
    }
  }
}

function deriveProtobuf(
  schema: RegistrySchema,
  codec: SchemaCodec,
  field: string,
  type: OutputType,
  messageIndexes: number[],
): DerivedSchema {
  if (!(codec instanceof ProtobufCodec)) throw new Error('a Protobuf schema without its codec');
  const message = codec.messageAt(messageIndexes);
  const existing = message.fields[field];
  let number = existing?.id ?? 0;
  if (existing === undefined) {
    for (const f of message.fieldsArray) number = Math.max(number, f.id);
    for (const range of message.reserved ?? [])
      if (Array.isArray(range)) number = Math.max(number, range[1] ?? 0);
    number += 1;
  }
  const writer = new ProtoWriter();
  const out = writer.field(type, `Hugot${pascal(field)}`);
  const line = `${out.repeated ? 'repeated ' : ''}${out.type} ${field} = ${number};`;
  const text = insertIntoMessage(
    schema.schema,
    messageIndexes,
    writer.messages,
    line,
    existing !== undefined ? field : undefined,
  );
  const adaptField = out.adapt;
  return {
    schema: { ...schema, schema: text },
    adapt: (value) => {
      if (value === null || typeof value !== 'object') return value;
      const record = value as Record<string, unknown>;
      return record[field] === undefined
        ? record
        : { ...record, [field]: adaptField(record[field]) };
    },
  };
}

interface MessageSpan {
  open: number;
  close: number;
  children: MessageSpan[];
}

/** The .proto text with comments and strings blanked (same offsets), for finding braces. */
function blanked(text: string): string {
  return text.replace(/\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'/g, (m) =>
    m.replace(/[^\n]/g, ' '),
  );
}

function messageSpans(text: string): MessageSpan[] {
  const plain = blanked(text);
  const top: MessageSpan[] = [];
  const stack: { span: MessageSpan | undefined }[] = [];
  const declaration = /\bmessage\s+[A-Za-z_][A-Za-z0-9_]*\s*\{/y;
  for (let i = 0; i < plain.length; i += 1) {
    const c = plain[i];
    if (c === 'm') {
      declaration.lastIndex = i;
      const found = declaration.exec(plain);
      if (found !== null && (i === 0 || !/[A-Za-z0-9_.]/.test(plain[i - 1] ?? ''))) {
        const span: MessageSpan = { open: i + found[0].length - 1, close: -1, children: [] };
        // Only messages directly inside a message (or at the top) are indexed.
        const around = stack.at(-1);
        if (around === undefined) top.push(span);
        else around.span?.children.push(span);
        stack.push({ span });
        i = span.open;
        continue;
      }
    }
    if (c === '{') stack.push({ span: undefined });
    else if (c === '}') {
      const closed = stack.pop();
      if (closed?.span !== undefined) closed.span.close = i;
    }
  }
  return top;
}

function insertIntoMessage(
  text: string,
  indexes: number[],
  messages: string[],
  line: string,
  replacing: string | undefined,
): string {
  let candidates = messageSpans(text);
  let span: MessageSpan | undefined;
  for (const index of indexes) {
    span = candidates[index];
    if (span === undefined)
      throw new SchemaRefusedError('the input message is not in its .proto text');
    candidates = span.children;
  }
  if (span === undefined || span.close < 0)
    throw new SchemaRefusedError('the input message is not in its .proto text');
  let body = text.slice(span.open + 1, span.close);
  if (replacing !== undefined)
    // The field the output replaces (output.overwrite): its declaration goes, its number stays.
    body = body.replace(new RegExp(`[^;{}]*\\b${replacing}\\s*=\\s*\\d+[^;]*;`), '');
  const added = [...messages, line].map((m) => `  ${m}\n`).join('');
  return `${text.slice(0, span.open + 1)}${body}${body.endsWith('\n') ? '' : '\n'}${added}${text.slice(span.close)}`;
}
