// The worker's configuration: what a YAML file (plus environment overrides) must say. Every
// default lives here; validation happens once, at start-up, and names the field it rejects.
import { z } from 'zod';
import { runtimeOptionsSchema } from '../pipelines/runtime-options.ts';
import { kafkaConnectionSchema, redisConnectionSchema } from './connection-schema.ts';
import {
  generativePipelineSchema,
  outputStreamSchema,
  routeGenerationSchema,
} from './generative-schema.ts';

const name = z.string().min(1);

const modelSchema = z
  .object({
    path: name,
    onnxFile: z.string().optional(),
    runtime: runtimeOptionsSchema.partial().optional(),
  })
  .strict();

const pipelineSchema = z
  .object({
    task: name,
    model: name,
    options: z.record(z.string(), z.unknown()).optional(),
    /** Checked in detail when the engine starts (src/batching/batcher-options.ts). */
    batching: z.record(z.string(), z.unknown()).optional(),
    /** textGeneration only: run on the continuous-batching generative engine (docs/generative.md). */
    generative: generativePipelineSchema.optional(),
  })
  .strict();

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
    /** Exactly-once: transactional ids are `<prefix>-<topic>-<partition>`; default `hugot-<groupId>`. */
    transactionalIdPrefix: z.string().min(1).optional(),
    /** Exactly-once: the broker aborts a transaction left open this long (a dead worker's). */
    transactionTimeoutMs: z.number().int().min(1).default(60_000),
    /** Exactly-once: a partition commits its transaction at this many staged records, or every commitIntervalMs. */
    transactionMaxRecords: z.number().int().min(1).default(1000),
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
  z.object({ type: z.literal('kafka'), topic: name }).strict(),
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

const routeSchema = z
  .object({
    name: name.optional(),
    source: sourceSchema,
    pipeline: name,
    input: z
      .object({
        /** 'json': the record is JSON and `field` picks the input; 'text': the whole record is the input. */
        format: z.enum(['json', 'text']).default('json'),
        field: z.string().default('text'),
      })
      .strict()
      .default({ format: 'json', field: 'text' }),
    output: z
      .object({
        /** 'merge': the input record with the result at `field`; 'result': the result alone. */
        mode: z.enum(['merge', 'result']).default('merge'),
        field: z.string().default('result'),
        /** Generative pipelines only: partial records while a request generates. */
        stream: outputStreamSchema.optional(),
      })
      .strict()
      .default({ mode: 'merge', field: 'result' }),
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
    shards: z.array(z.unknown()).default(['cpu']),
    batching: z.record(z.string(), z.unknown()).optional(),
    connections: z
      .object({
        kafka: kafkaConnectionSchema.optional(),
        redis: redisConnectionSchema.optional(),
      })
      .strict()
      .default({}),
    delivery: z
      .object({
        mode: z.enum(['at-least-once', 'exactly-once']).default('at-least-once'),
        /** Retries of a retriable failure (a crashed inference thread) before the record is dead-lettered. */
        retries: z.number().int().min(0).default(2),
        commitIntervalMs: z.number().int().min(1).default(1000),
      })
      .strict()
      .default({ mode: 'at-least-once', retries: 2, commitIntervalMs: 1000 }),
    limits: z
      .object({
        maxRecordBytes: z.number().int().min(1).default(1_048_576),
        maxTextLength: z.number().int().min(1).default(100_000),
      })
      .strict()
      .default({ maxRecordBytes: 1_048_576, maxTextLength: 100_000 }),
    shutdown: z
      .object({ timeoutMs: z.number().int().min(0).default(30_000) })
      .strict()
      .default({ timeoutMs: 30_000 }),
  })
  .strict();

export type WorkerConfig = z.output<typeof configSchema>;
export type RouteConfig = WorkerConfig['routes'][number];
export type SourceConfig = z.output<typeof sourceSchema>;
export type SinkConfig = z.output<typeof sinkSchema>;
