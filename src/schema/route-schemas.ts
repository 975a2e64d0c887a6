// What one route does with the Schema Registry: decode its Kafka values (and keys) written in a
// schema format, and write its outputs with output.schema. Built once per route from the plan;
// the processor calls it, the registry connection is the worker's.
import type { RouteConfig } from '../config/schema.ts';
import { isSchemaFormat, type SchemaFormat } from '../config/record-format-schema.ts';
import { SchemaDecodeError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { OutputSchemas, type DecodedInput } from './output-schemas.ts';
import type { RegistryConnection } from './registry-connection.ts';
import type { SchemaType } from './registry-client.ts';
import { unframe } from './wire-format.ts';

const TYPE_OF: Record<SchemaFormat, SchemaType> = {
  avro: 'AVRO',
  protobuf: 'PROTOBUF',
  'json-schema': 'JSON',
};

export interface Decoded extends DecodedInput {
  value: unknown;
}

export class RouteSchemas {
  readonly output: OutputSchemas | undefined;
  private readonly connection: RegistryConnection;

  constructor(route: RouteConfig, connection: RegistryConnection, logger: Logger) {
    this.connection = connection;
    const schema =
      route.output.schema ?? (isSchemaFormat(route.input.format) ? 'derive' : undefined);
    this.output =
      schema === undefined || route.sink.type !== 'kafka'
        ? undefined
        : new OutputSchemas({
            schema,
            subjectNaming: route.output.subjectNaming,
            topic: route.sink.topic,
            field: route.output.field,
            registry: connection.registry,
            outage: connection.outage,
            writers: connection.writers,
            logger,
          });
  }

  /** Whether the route needs the registry at all (a schema format in, or output.schema). */
  static needed(route: RouteConfig): boolean {
    return (
      isSchemaFormat(route.input.format) ||
      isSchemaFormat(route.input.keyFormat) ||
      route.output.schema !== undefined
    );
  }

  /** A value or key in the wire format, decoded with its writer's schema (waits out outages). */
  async decode(
    bytes: Buffer,
    format: SchemaFormat,
    what: string,
    signal?: AbortSignal,
  ): Promise<Decoded> {
    const framed = unframe(bytes, format === 'protobuf');
    const writer = await this.connection.writers.schema(framed.schemaId, signal);
    const type = writer.resolved.schema.schemaType;
    if (type !== TYPE_OF[format])
      throw new SchemaDecodeError(
        `the record's ${what} names schema id ${framed.schemaId}, a ${type} schema, but the route reads ${format}`,
      );
    return {
      value: writer.codec.decode(framed.payload, framed.messageIndexes),
      writer,
      messageIndexes: framed.messageIndexes,
    };
  }
}
