// The worker's configuration: what a YAML file (plus environment overrides) must say. Every
// default lives here; validation happens once, at start-up, and names the field it rejects.
import { isAbsolute } from 'node:path';
import { z } from 'zod';
import { batcherOptionsSchema } from '../batching/batcher-options.ts';
import { checkedAsWritten, checkWithSchema } from '../options/parse.ts';
import {
  findTask,
  GENERATIVE_TASK_NAMES,
  isGenerativeTask,
  unknownTaskMessage,
} from '../pipelines/registry.ts';
import { ONNX_VARIANTS } from '../models/onnx-layout.ts';
import { runtimeOptionsSchema } from '../runtime/runtime-options.ts';
import { shardSchema } from '../shards/shard-spec.ts';
import { DEFAULT_SHARDS } from '../shards/device-name.ts';
import {
  kafkaConnectionSchema,
  redisConnectionSchema,
  schemaRegistryConnectionSchema,
} from './connection-schema.ts';
import {
  outputSchemaSchema,
  RECORD_FORMATS,
  SCHEMA_FORMATS,
  SUBJECT_NAMINGS,
} from './record-format-schema.ts';
import {
  generativePipelineSchema,
  outputStreamSchema,
  routeGenerationSchema,
} from './generative-schema.ts';
import { checkModelSource, hubModelFields } from './hub-model-schema.ts';
import { telemetrySchema } from './telemetry-options.ts';

const name = z.string().min(1);

const modelSchema = z
  .object({
    /** A model folder; or, with `hub`, nothing: the Hub snapshot's folder is filled in at start-up. */
    path: name.optional(),
    /** One .onnx file by its path inside the folder (onnx/model_q4.onnx); a graph alone. */
    onnxFile: z.string().min(1).optional(),
    /** Which variant of the folder's graphs (model_fp16.onnx: fp16); default fp32, or the only one. */
    variant: z.enum(ONNX_VARIANTS).optional(),
    runtime: runtimeOptionsSchema.schema.partial().optional(),
    ...hubModelFields,
  })
  .strict()
  .superRefine(checkModelSource)
  .refine((m) => m.onnxFile === undefined || m.variant === undefined, {
    path: ['variant'],
    message: 'onnxFile and variant both choose the graph; keep one',
  });

/** Batching as written: a pipeline's is merged over the worker's before it is compiled. */
const batchingSchema = checkedAsWritten(batcherOptionsSchema);

const pipelineSchema = z
  .object({
    task: name.superRefine((task, ctx) => {
      if (findTask(task) === undefined)
        ctx.addIssue({ code: 'custom', message: unknownTaskMessage(task) });
    }),
    model: name,
    /**
     * The task's options, checked against its schema (src/pipelines/registry.ts) and kept as
     * written: the pipeline parses them again where it loads, and the batch pricing reads them.
     */
    options: z.record(z.string(), z.unknown()).optional(),
    /** Over the worker's batching, for this pipeline (src/batching/batcher-options.ts). */
    batching: batchingSchema.optional(),
    /** textGeneration and encoder–decoder text tasks: run on the generative engine (docs/generative.md). */
    generative: generativePipelineSchema.optional(),
  })
  .strict()
  // Runs even when another field failed, so that one pass reports every problem.
  .superRefine(checkTaskFields, { when: () => true });

/** What depends on the pipeline's task: its options, and whether it may be generative. */
function checkTaskFields(pipeline: unknown, ctx: z.RefinementCtx): void {
  if (pipeline === null || typeof pipeline !== 'object') return;
  const { task, options, generative } = pipeline as Record<string, unknown>;
  const definition = typeof task === 'string' ? findTask(task) : undefined;
  if (generative !== undefined && typeof task === 'string' && !isGenerativeTask(task))
    ctx.addIssue({
      code: 'custom',
      path: ['generative'],
      message: `only ${GENERATIVE_TASK_NAMES.join(', ')} pipelines run on the generative engine; remove it or use one of those tasks`,
    });
  // An unknown task has no options to check against; its name is reported on its own.
  if (definition === undefined || (options !== undefined && !isRecord(options))) return;
  const checked = checkWithSchema(
    definition.optionsSchema,
    options ?? {},
    `not an option of ${definition.task}`,
  );
  if (!checked.ok)
    for (const problem of checked.problems)
      ctx.addIssue({
        code: 'custom',
        path: ['options', ...problem.path],
        message: problem.message,
      });
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const kafkaSourceSchema = z
  .object({
    type: z.literal('kafka'),
    topic: name,
    groupId: name,
    fromBeginning: z.boolean().default(true),
    /** Records of one partition held in flight at most before the partition is paused. */
    maxInFlightPerPartition: z.number().int().min(1).default(2048),
    /** The group drops a member that sends no heartbeat for this long. */
    sessionTimeoutMs: z.number().int().min(1).default(30_000),
    heartbeatIntervalMs: z.number().int().min(1).default(3_000),
    /**
     * How often the topic's partition count is asked; more partitions than before rejoin the
     * group so that the new ones are read (Flink's partition discovery). 0: never.
     */
    partitionDiscoveryMs: z.number().int().min(0).default(30_000),
    /** Exactly-once: transactional ids are `<prefix>-<topic>-<partition>`; default `hugot-<groupId>`. */
    transactionalIdPrefix: z.string().min(1).optional(),
    /** Exactly-once: the broker aborts a transaction left open this long (a dead worker's). */
    transactionTimeoutMs: z.number().int().min(1).default(60_000),
    /** Exactly-once: a partition commits its transaction at this many staged records, or every commitIntervalMs. */
    transactionMaxRecords: z.number().int().min(1).default(1000),
    /**
     * Exactly-once: a partition commits its transaction once its staged outputs reach this many
     * bytes, and sends them in requests of at most this size. Keep it under the broker's
     * message.max.bytes (default 1 MiB), or transactions are refused and retried forever.
     */
    transactionMaxBytes: z.number().int().min(1024).default(1_000_000),
  })
  .strict();

const bullmqSourceSchema = z
  .object({
    type: z.literal('bullmq'),
    queue: name,
    /** Jobs processed at once; they wait in the batcher together, which is how they batch. */
    concurrency: z.number().int().min(1).default(256),
  })
  .strict();

const redisStreamSourceSchema = z
  .object({
    type: z.literal('redis-stream'),
    stream: name,
    group: name,
    consumer: z.string().optional(),
    count: z.number().int().min(1).default(256),
    blockMs: z.number().int().min(1).default(1000),
    /** Entries pending longer than this are reclaimed from dead consumers. */
    claimIdleMs: z.number().int().min(1).default(30_000),
    /** An entry delivered more often than this goes to the dead-letter destination. */
    maxDeliveries: z.number().int().min(1).default(5),
  })
  .strict();

const fileSourceSchema = z
  .object({
    type: z.literal('file'),
    /** A JSONL file, or '-' for standard input. */
    path: name,
  })
  .strict();

export const sourceSchema = z.discriminatedUnion('type', [
  kafkaSourceSchema,
  bullmqSourceSchema,
  redisStreamSourceSchema,
  fileSourceSchema,
]);

export const sinkSchema = z.discriminatedUnion('type', [
  z
    .object({
      type: z.literal('kafka'),
      topic: name,
      /**
       * The broker's message.max.bytes (or the topic's max.message.bytes): an output larger than
       * this goes to the DLQ before it is sent, instead of being refused by the broker.
       */
      maxMessageBytes: z.number().int().min(1024).default(1_048_576),
    })
    .strict(),
  z
    .object({ type: z.literal('bullmq'), queue: name, jobName: z.string().default('result') })
    .strict(),
  /** The BullMQ job's return value only (its source must be bullmq). */
  z.object({ type: z.literal('bullmq-result') }).strict(),
  z
    .object({
      type: z.literal('redis-stream'),
      stream: name,
      maxLength: z.number().int().min(1).optional(),
    })
    .strict(),
  z.object({ type: z.literal('file'), path: name }).strict(),
]);

/** What one record may hold; past a limit the record goes to the DLQ (docs/security.md). */
const limitsSchema = z
  .object({
    maxRecordBytes: z.number().int().min(1).default(1_048_576),
    /** Characters of every text field: a text, a question or context, a document, a chat message. */
    maxTextLength: z.number().int().min(1).default(100_000),
    /**
     * Nesting of a JSON record, checked before it is parsed. At most 1,000: deeper values would
     * overflow the stack of JSON.stringify and of the copy to an inference thread.
     */
    maxJsonDepth: z.number().int().min(1).max(1000).default(64),
    /** Items of a list input: crossEncoder documents, chat messages. */
    maxListItems: z.number().int().min(1).default(256),
    /** Stop sequences a record's own generation options may carry. */
    maxStopSequences: z.number().int().min(0).default(16),
    /** Pixels (width x height) of an image input, read from its header before it is decoded. */
    maxImagePixels: z.number().int().min(1).default(25_000_000),
    /** Bytes of an image read from a path (input.images.from: path). */
    maxImageBytes: z.number().int().min(1).default(20_971_520),
    /** Bytes of an audio file input (after base64 decoding), checked before it is parsed. */
    maxAudioBytes: z.number().int().min(1).default(20_971_520),
    /** Seconds of an audio input, read from its header or frame headers before it is decoded. */
    maxAudioSeconds: z.number().positive().default(600),
  })
  .strict();

/**
 * Image tasks: by default a string input is the image's bytes in base64 (a data: URL too); a
 * route that opts in with `from: path` reads files, only under `root`.
 */
const imageInputSchema = z
  .object({
    from: z.enum(['base64', 'path']).default('base64'),
    /** from path: an absolute directory; a path resolving outside it (symlinks too) is refused. */
    root: z.string().min(1).optional(),
  })
  .strict()
  .superRefine((value, ctx) => {
    if (value.from === 'path' && (value.root === undefined || !isAbsolute(value.root)))
      ctx.addIssue({
        code: 'custom',
        path: ['root'],
        message:
          'input.images.from: path needs root, an absolute directory the image paths must stay under',
      });
    if (value.from === 'base64' && value.root !== undefined)
      ctx.addIssue({
        code: 'custom',
        path: ['root'],
        message: 'root is for input.images.from: path; remove it or set from: path',
      });
  });

/**
 * Embedding tasks: how a vector is written (src/route/vector-encoding.ts) and how many of its
 * values are kept (Matryoshka truncation); docs/pipelines.md#compact-vectors.
 */
const vectorOutputSchema = z
  .object({
    encoding: z.enum(['json', 'base64-f32', 'base64-f16', 'int8', 'binary']).default('json'),
    /** The first N values, renormalised when the pipeline normalises; default: all of them. */
    dimensions: z
      .number()
      .int()
      .min(
        1,
        'dimensions keeps the first N values of each vector, so N must be 1 or more; remove it to keep them all',
      )
      .optional(),
  })
  .strict();

const routeSchema = z
  .object({
    name: name.optional(),
    source: sourceSchema,
    pipeline: name,
    input: z
      .object({
        /**
         * 'json': the record is JSON and `field` picks the input; 'text': the whole record is the
         * input; 'bytes': the record's raw bytes are the input (an image in a binary Kafka value);
         * 'avro' | 'protobuf' | 'json-schema': a Kafka value in the Confluent wire format, decoded
         * with its writer's schema from connections.schemaRegistry, `field` picking the input.
         */
        format: z.enum(RECORD_FORMATS).default('json'),
        /**
         * The Kafka key: 'bytes' passes it through untouched; a schema format decodes it with its
         * writer's schema too (a key that does not decode is dead-lettered). Outputs keep the
         * key's bytes either way.
         */
        keyFormat: z.enum(['bytes', ...SCHEMA_FORMATS]).default('bytes'),
        field: z.string().default('text'),
        /** Image tasks: what a string input is (docs/security.md#image-inputs). */
        images: imageInputSchema.optional(),
      })
      .strict()
      .default({ format: 'json', keyFormat: 'bytes', field: 'text' }),
    output: z
      .object({
        /** 'merge': the input record with the result at `field`; 'result': the result alone. */
        mode: z.enum(['merge', 'result']).default('merge'),
        field: z.string().default('result'),
        /** merge: replace a field the record already has at `field` (else it goes to the DLQ). */
        overwrite: z.boolean().default(false),
        /**
         * 'python': each task's result as Python's pipeline gives it (entity_group,
         * [{generated_text}], ...); 'hugot': this project's own keys (docs/pipelines.md#output-keys).
         */
        keys: z.enum(['python', 'hugot']).default('python'),
        /** Python's return_full_text, for output.keys python: generated_text starts with the prompt. */
        returnFullText: z.boolean().default(true),
        /** Generative pipelines only: partial records while a request generates. */
        stream: outputStreamSchema.optional(),
        /** featureExtraction and imageFeatureExtraction only: compact vectors. */
        vectors: vectorOutputSchema.optional(),
        /**
         * The output value's schema (Kafka sinks): 'derive' (the default for a schema input
         * format) is the input's schema plus the output field; `{subject, version}` a schema
         * already registered. docs/sources-and-sinks.md#schema-registry-formats.
         */
        schema: outputSchemaSchema.optional(),
        /** output.schema derive: the subject it is registered under (record-format-schema.ts). */
        subjectNaming: z.enum(SUBJECT_NAMINGS).default('topic'),
      })
      .strict()
      .default({
        mode: 'merge',
        field: 'result',
        overwrite: false,
        keys: 'python',
        returnFullText: true,
        subjectNaming: 'topic',
      }),
    /** Generative pipelines only: per-request deadline, options and id from the record. */
    generation: routeGenerationSchema.optional(),
    sink: sinkSchema,
    dlq: sinkSchema.optional(),
  })
  .strict();

export const configSchema = z
  .object({
    models: z
      .record(name, modelSchema)
      .refine((m) => Object.keys(m).length > 0, 'at least one model is needed'),
    pipelines: z
      .record(name, pipelineSchema)
      .refine((p) => Object.keys(p).length > 0, 'at least one pipeline is needed'),
    routes: z.array(routeSchema).min(1),
    shards: z.array(shardSchema).default([...DEFAULT_SHARDS]),
    batching: batchingSchema.optional(),
    connections: z
      .object({
        kafka: kafkaConnectionSchema.optional(),
        redis: redisConnectionSchema.optional(),
        /** Avro, Protobuf and JSON Schema records (docs/sources-and-sinks.md#schema-registry-formats). */
        schemaRegistry: schemaRegistryConnectionSchema.optional(),
      })
      .strict()
      .default({}),
    delivery: z
      .object({
        mode: z.enum(['at-least-once', 'exactly-once']).default('at-least-once'),
        /** Retries of a retriable failure (a crashed inference thread) before the record is dead-lettered. */
        retries: z.number().int().min(0).default(2),
        commitIntervalMs: z.number().int().min(1).default(1000),
        /**
         * Kafka: times a record's write may fail (not counting broker outages) before it goes to
         * the DLQ instead of its partition being read again from the last commit.
         */
        maxAttempts: z.number().int().min(1).default(5),
      })
      .strict()
      .prefault({}),
    limits: limitsSchema.prefault({}),
    shutdown: z
      .object({ timeoutMs: z.number().int().min(0).default(30_000) })
      .strict()
      .default({ timeoutMs: 30_000 }),
    /**
     * How long `run` waits at start for brokers, Redis and topics that are merely absent (not up
     * yet, not yet created) before giving up with exit 1; 0 asks once (src/worker/startup-wait.ts).
     */
    startup: z
      .object({ timeoutMs: z.number().int().min(0).default(300_000) })
      .strict()
      .default({ timeoutMs: 300_000 }),
    /** Metrics, health endpoints, traces and stats lines (docs/operations.md); off unless asked. */
    telemetry: telemetrySchema.prefault({}),
  })
  .strict();

export type WorkerConfig = z.output<typeof configSchema>;
export type RouteConfig = WorkerConfig['routes'][number];
export type SourceConfig = z.output<typeof sourceSchema>;
export type SinkConfig = z.output<typeof sinkSchema>;
