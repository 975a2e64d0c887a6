// Spans for a record's way through the worker, after the OpenTelemetry messaging conventions:
//
//   process <source>   (consumer) from the record's arrival to its write; its parent is the
//                      W3C traceparent the record came with (Kafka header, Redis Streams field,
//                      BullMQ job), so a trace crosses the worker
//     queue <pipeline> time the record's input waited in the batcher
//     infer <pipeline> the inference batch it ran in (same times as the batch's own span)
//     send <sink>      (producer) the write of its output or dead letter, whose context the
//                      output record carries on as its traceparent
//
// and one `infer <pipeline>` span per batch, linked to the process span of every record in it.
// Spans are keyed by the record's origin object, which the output and dead-letter records share
// with the source record, so nothing is added to the records themselves.
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type TextMapPropagator,
  type Tracer,
} from '@opentelemetry/api';
import type { RecordOrigin, SourceRecord, OutputRecord, Headers } from '../route/record.ts';

/** One finished batch with what tracing needs (times on the performance.now() clock). */
export interface TracedBatch {
  pipeline: string;
  shard: string;
  /** What BatchEngine.submit was given for each item (a span context, or undefined). */
  traces: readonly unknown[];
  enqueuedAt: readonly number[];
  paddedTokens: number;
  startedAt: number;
  endedAt: number;
}

export interface RecordTracingOptions {
  tracer: Tracer;
  propagator: TextMapPropagator;
  /** performance.now() -> epoch milliseconds. */
  timeOrigin?: number;
}

export class RecordTracing {
  private readonly tracer: Tracer;
  private readonly propagator: TextMapPropagator;
  private readonly timeOrigin: number;
  private readonly spans = new WeakMap<RecordOrigin, Span>();

  constructor(options: RecordTracingOptions) {
    this.tracer = options.tracer;
    this.propagator = options.propagator;
    this.timeOrigin = options.timeOrigin ?? performance.timeOrigin;
  }

  /** The record arrived: its process span starts, as a child of the trace it came with. */
  received(route: string, record: SourceRecord): void {
    const parent = this.propagator.extract(ROOT_CONTEXT, record.headers, headerGetter);
    const span = this.tracer.startSpan(
      `process ${destinationOf(record.origin)}`,
      { kind: SpanKind.CONSUMER, attributes: { ...originAttributes(record.origin), route } },
      parent,
    );
    this.spans.set(record.origin, span);
  }

  /** The span context to hand to the engine with the record's input (undefined when untraced). */
  contextOf(record: SourceRecord): SpanContext | undefined {
    return this.spans.get(record.origin)?.spanContext();
  }

  /** The batch span, linked to its records, and each record's queue and inference spans. */
  batch(done: TracedBatch): void {
    const links: Link[] = [];
    for (const traced of done.traces) if (isSpanContext(traced)) links.push({ context: traced });
    if (links.length === 0) return;
    const startTime = this.epoch(done.startedAt);
    const endTime = this.epoch(done.endedAt);
    const attributes = {
      'hugot.pipeline': done.pipeline,
      'hugot.shard': done.shard,
      'hugot.batch.size': done.traces.length,
      'hugot.batch.padded_tokens': done.paddedTokens,
    };
    const batchSpan = this.tracer.startSpan(
      `infer ${done.pipeline}`,
      { kind: SpanKind.INTERNAL, startTime, links, attributes },
      ROOT_CONTEXT,
    );
    batchSpan.end(endTime);
    const batchLink: Link = { context: batchSpan.spanContext() };
    done.traces.forEach((traced, i) => {
      if (!isSpanContext(traced)) return;
      const parent = trace.setSpanContext(ROOT_CONTEXT, traced);
      const queued = done.enqueuedAt[i];
      if (queued !== undefined)
        this.tracer
          .startSpan(
            `queue ${done.pipeline}`,
            { startTime: this.epoch(queued), attributes: { 'hugot.pipeline': done.pipeline } },
            parent,
          )
          .end(startTime);
      this.tracer
        .startSpan(`infer ${done.pipeline}`, { startTime, links: [batchLink], attributes }, parent)
        .end(endTime);
    });
  }

  /**
   * The record's output (or dead letter) is about to be written: a send span starts and the
   * record's traceparent header becomes that span's context. Returns the function that ends it.
   */
  sending(record: OutputRecord, sink: string): (error?: unknown) => void {
    const process = this.spans.get(record.origin);
    if (process === undefined) return () => undefined;
    const parent = trace.setSpan(ROOT_CONTEXT, process);
    const span = this.tracer.startSpan(
      `send ${sink}`,
      { kind: SpanKind.PRODUCER, attributes: { 'messaging.operation.type': 'send' } },
      parent,
    );
    this.inject(trace.setSpan(ROOT_CONTEXT, span), record.headers);
    return (error) => {
      if (error !== undefined) fail(span, error);
      span.end();
    };
  }

  /** The record is done with (written, dead-lettered, or failed to be written). */
  finished(origin: RecordOrigin, outcome: string, error?: unknown): void {
    const span = this.spans.get(origin);
    if (span === undefined) return;
    this.spans.delete(origin);
    span.setAttribute('hugot.outcome', outcome);
    if (error !== undefined) fail(span, error);
    span.end();
  }

  private inject(context: Context, headers: Headers): void {
    // A stale traceparent from the incoming record must not survive beside the new one.
    delete headers['traceparent'];
    delete headers['tracestate'];
    this.propagator.inject(context, headers, {
      set: (carrier: Headers, key: string, value: string) => {
        carrier[key] = value;
      },
    });
  }

  private epoch(performanceMs: number): number {
    return this.timeOrigin + performanceMs;
  }
}

const headerGetter = {
  keys: (carrier: Headers): string[] => Object.keys(carrier),
  get: (carrier: Headers, key: string): string | undefined => {
    const value = carrier[key];
    const first = Array.isArray(value) ? value[0] : value;
    return first === undefined ? undefined : first.toString();
  },
};

function isSpanContext(value: unknown): value is SpanContext {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as SpanContext).traceId === 'string' &&
    typeof (value as SpanContext).spanId === 'string'
  );
}

function fail(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({
    code: SpanStatusCode.ERROR,
    message: error instanceof Error ? error.message : String(error),
  });
}

function destinationOf(origin: RecordOrigin): string {
  switch (origin.kind) {
    case 'kafka':
      return origin.topic;
    case 'bullmq':
      return origin.queue;
    case 'redis-stream':
      return origin.stream;
    case 'file':
      return origin.path;
  }
}

function originAttributes(origin: RecordOrigin): Record<string, string | number> {
  const common = {
    'messaging.operation.type': 'process',
    'messaging.destination.name': destinationOf(origin),
  };
  switch (origin.kind) {
    case 'kafka':
      return {
        ...common,
        'messaging.system': 'kafka',
        'messaging.destination.partition.id': String(origin.partition),
        'messaging.kafka.offset': Number(origin.offset),
      };
    case 'bullmq':
      return { ...common, 'messaging.system': 'bullmq', 'messaging.message.id': origin.jobId };
    case 'redis-stream':
      return { ...common, 'messaging.system': 'redis', 'messaging.message.id': origin.id };
    case 'file':
      return { ...common, 'messaging.system': 'file', 'hugot.file.line': origin.line };
  }
}
