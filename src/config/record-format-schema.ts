// What a record's bytes are (input.format, input.keyFormat) and, for Schema Registry formats,
// which schema an output is written with (output.schema). The codecs are in src/schema/.
import { z } from 'zod';

/** Confluent wire format: a magic byte, the schema id, (Protobuf) message indexes, the payload. */
export const SCHEMA_FORMATS = ['avro', 'protobuf', 'json-schema'] as const;
export const RECORD_FORMATS = ['json', 'text', 'bytes', ...SCHEMA_FORMATS] as const;

export type SchemaFormat = (typeof SCHEMA_FORMATS)[number];
export type RecordFormat = (typeof RECORD_FORMATS)[number];

export const isSchemaFormat = (format: string): format is SchemaFormat =>
  (SCHEMA_FORMATS as readonly string[]).includes(format);

/**
 * 'derive': the input's writer schema plus the output field, registered under the subject that
 * output.subjectNaming names and checked against the subject's compatibility rules before the
 * first write. The object form names a schema already registered: its subject and version
 * ('latest' is asked once, at the first write).
 */
export const outputSchemaSchema = z.union([
  z.literal('derive'),
  z
    .object({
      subject: z.string().min(1),
      version: z.union([z.number().int().min(1), z.literal('latest')]),
    })
    .strict(),
]);

/**
 * Where a derived schema is registered. 'topic': `<output topic>-value` (Confluent's
 * TopicNameStrategy); 'record': the derived record's full name (RecordNameStrategy);
 * 'topic-record': `<output topic>-<full name>` (TopicRecordNameStrategy).
 */
export const SUBJECT_NAMINGS = ['topic', 'record', 'topic-record'] as const;

export type OutputSchemaConfig = z.output<typeof outputSchemaSchema>;
export type SubjectNaming = (typeof SUBJECT_NAMINGS)[number];
