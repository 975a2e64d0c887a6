// The schema a route's outputs are written with, and their bytes. 'derive': per writer schema
// (and Protobuf message) of the input, the writer's schema plus the output field, registered under
// output.subjectNaming's subject after the registry's compatibility check, before the first output
// that needs it; an input whose producer moves to a new schema id gets a new derived schema the
// same way, and an output whose type widens what was learned (an entity with a key not seen
// before) too. `{subject, version}`: that schema, read once. Registry outages wait. A compact
// vector (VectorBytes) is written as the schema's format holds it (vector-bytes.ts).
import type { OutputSchemaConfig, SubjectNaming } from '../config/record-format-schema.ts';
import { SchemaRefusedError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { deriveSchema, type DerivedSchema } from './derived-schema.ts';
import { sameType, typeOf, widen, type OutputType } from './output-type.ts';
import type { RegistryOutage } from './registry-outage.ts';
import type { SchemaRegistry } from './registry-client.ts';
import { codecFor, type SchemaCodec } from './schema-codec.ts';
import { vectorsFor } from './vector-bytes.ts';
import { frame } from './wire-format.ts';
import { untilAborted, type WriterSchema, type WriterSchemas } from './writer-schemas.ts';

export interface OutputSchemasOptions {
  schema: OutputSchemaConfig;
  subjectNaming: SubjectNaming;
  /** The output topic: TopicNameStrategy's subject is `<topic>-value`. */
  topic: string;
  /** output.field: what derive adds. */
  field: string;
  registry: SchemaRegistry;
  outage: RegistryOutage;
  writers: WriterSchemas;
  logger: Logger;
}

/** The input record as decoded: which schema wrote it. */
export interface DecodedInput {
  writer: WriterSchema;
  messageIndexes: number[] | undefined;
}

interface OutputCodec {
  id: number;
  codec: SchemaCodec;
  adapt: DerivedSchema['adapt'];
  messageIndexes: number[] | undefined;
}

export class OutputSchemas {
  private readonly options: OutputSchemasOptions;
  private readonly derived = new Map<string, Promise<OutputCodec>>();
  private given: Promise<OutputCodec> | undefined;
  /** The output field's type as learned from every result so far. */
  private learned: OutputType = { kind: 'unknown' };

  constructor(options: OutputSchemasOptions) {
    this.options = options;
  }

  /**
   * The output's bytes in the wire format. `value` is what is written (the merged record, or the
   * result alone); `result` the output field's value, whose type derive learns.
   */
  async encode(
    value: unknown,
    result: unknown,
    input: DecodedInput | undefined,
    signal?: AbortSignal,
  ): Promise<Buffer> {
    const out = await untilAborted(this.codecFor(result, input), signal);
    const held = vectorsFor(value, out.codec.schemaType);
    const payload = out.codec.encode(out.adapt(held), out.messageIndexes);
    return frame(out.id, payload, out.messageIndexes);
  }

  private codecFor(result: unknown, input: DecodedInput | undefined): Promise<OutputCodec> {
    if (this.options.schema !== 'derive')
      return (this.given ??= this.readGiven(this.options.schema));
    if (input === undefined)
      throw new SchemaRefusedError('output.schema derive needs an input decoded with a schema');
    // Learned as the writer's format holds it: a compact vector is bytes, or int8 numbers in JSON.
    const held = vectorsFor(result, input.writer.resolved.schema.schemaType);
    const type = widen(this.learned, typeOf(held, this.options.field), this.options.field);
    if (!sameType(type, this.learned)) this.learned = type;
    const indexes = input.messageIndexes;
    const key = `${input.writer.id}/${indexes?.join('.') ?? ''}/${JSON.stringify(type)}`;
    let found = this.derived.get(key);
    if (found === undefined) {
      found = this.register(input, type);
      found.catch(() => this.derived.delete(key));
      this.derived.set(key, found);
    }
    return found;
  }

  private async register(input: DecodedInput, type: OutputType): Promise<OutputCodec> {
    const { writer, messageIndexes } = input;
    const derived = deriveSchema(
      { schema: writer.resolved.schema, codec: writer.codec },
      this.options.field,
      type,
      messageIndexes,
    );
    let codec: SchemaCodec;
    try {
      codec = codecFor({ ...writer.resolved, schema: derived.schema });
    } catch (err) {
      throw new SchemaRefusedError(
        `the derived output schema does not parse: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err },
      );
    }
    const subject = this.subject(codec.recordName(messageIndexes));
    const id = await this.options.outage.call(() =>
      this.options.registry.register(subject, derived.schema),
    );
    this.options.logger.info(
      { subject, id, inputSchemaId: writer.id },
      'derived output schema registered',
    );
    return { id, codec, adapt: derived.adapt, messageIndexes };
  }

  private subject(recordName: string | undefined): string {
    const { subjectNaming, topic } = this.options;
    if (subjectNaming === 'topic') return `${topic}-value`;
    if (recordName === undefined)
      throw new SchemaRefusedError(
        `output.subjectNaming ${subjectNaming} needs a record name, and the schema has none (a JSON Schema without a title); use subjectNaming: topic`,
      );
    return subjectNaming === 'record' ? recordName : `${topic}-${recordName}`;
  }

  private async readGiven(given: Exclude<OutputSchemaConfig, 'derive'>): Promise<OutputCodec> {
    const found = await this.options.outage.call(() =>
      this.options.registry.version(given.subject, given.version),
    );
    const resolved = await this.options.writers.resolve(found);
    return {
      id: found.id,
      codec: codecFor(resolved),
      adapt: (value) => value,
      messageIndexes: found.schemaType === 'PROTOBUF' ? [0] : undefined,
    };
  }
}
