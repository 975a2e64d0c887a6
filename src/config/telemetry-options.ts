// The `telemetry:` block of the worker's config (docs/operations.md). Everything is off unless
// asked for: without `port` no server runs and no metric is recorded, without
// `tracing.endpoint` no span is made, and `enabled: false` turns all of it off at once (what a
// telemetry-on versus telemetry-off benchmark flips: HUGOT__telemetry__enabled=false).
import { z } from 'zod';
import { packageVersion } from '../version.ts';

const tracingSchema = z
  .object({
    /** OTLP over HTTP, e.g. http://otel-collector:4318/v1/traces; absent = no tracing. */
    endpoint: z.url().optional(),
    /** The traces' service.name when it must differ from telemetry.serviceName. */
    serviceName: z.string().min(1).optional(),
    /** Share of traces started here that are kept (a record with a sampled parent follows it). */
    sampleRatio: z.number().min(0).max(1).default(1),
  })
  .strict();

const healthSchema = z
  .object({
    /** A source reconnecting for longer than this counts as failed for good (Redis or Kafka gone). */
    sourceOutageMs: z.number().int().min(1).default(300_000),
    /** A source failed for good ends the process (exit code 1) after draining what it can. */
    exitOnSourceFailure: z.boolean().default(true),
  })
  .strict();

export const telemetrySchema = z
  .object({
    /** Master switch: false turns metrics, health endpoints, tracing and stats lines off. */
    enabled: z.boolean().default(true),
    /** The OpenTelemetry resource of metrics and traces: service.name and service.version. */
    serviceName: z.string().min(1).default('hugot-stream'),
    /** By default the package's version. */
    serviceVersion: z
      .string()
      .min(1)
      .default(() => packageVersion()),
    /** Serves /metrics, /livez and /readyz; absent = no server (and no metrics recorded). */
    port: z.number().int().min(0).max(65_535).optional(),
    /** The address the server binds: 127.0.0.1 keeps it to the host, 0.0.0.0 is every interface. */
    host: z.string().min(1).default('0.0.0.0'),
    /** false keeps only /livez and /readyz on the port. */
    metrics: z.boolean().default(true),
    /** How often consumer lag is read from the broker (it costs a request per source). */
    lagIntervalMs: z.number().int().min(100).default(15_000),
    /** A JSON `stats` log line this often when standard error is not a terminal; 0 = never. */
    statsIntervalMs: z.number().int().min(0).default(60_000),
    /**
     * A refused record without a DLQ is logged with its bytes (base64) only when true; by
     * default the line names it (origin, size) and leaves the data out of the logs.
     */
    logRecordBytes: z.boolean().default(false),
    tracing: tracingSchema.prefault({}),
    health: healthSchema.prefault({}),
  })
  .strict();

export type TelemetryConfig = z.output<typeof telemetrySchema>;
