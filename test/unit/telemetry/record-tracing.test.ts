import { SpanKind } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import type { OutputRecord, SourceRecord } from '../../../src/route/record.ts';
import { RecordTracing } from '../../../src/telemetry/record-tracing.ts';

const INCOMING_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_SPAN = '00f067aa0ba902b7';

function setup(): { tracing: RecordTracing; exporter: InMemorySpanExporter } {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  const tracing = new RecordTracing({
    tracer: provider.getTracer('test'),
    propagator: new W3CTraceContextPropagator(),
    timeOrigin: 1_700_000_000_000,
  });
  return { tracing, exporter };
}

function kafkaRecord(offset: string, traceparent?: string): SourceRecord {
  return {
    value: Buffer.from('{"text":"hi"}'),
    key: null,
    headers: traceparent === undefined ? {} : { traceparent: Buffer.from(traceparent) },
    origin: { kind: 'kafka', topic: 'events', partition: 2, offset },
  };
}

describe('RecordTracing', () => {
  it('continues the incoming trace: process -> queue -> infer -> send, and the output carries the send span', () => {
    const { tracing, exporter } = setup();
    const record = kafkaRecord('41', `00-${INCOMING_TRACE}-${INCOMING_SPAN}-01`);
    const other = kafkaRecord('42');
    tracing.received('route-a', record);
    tracing.received('route-a', other);
    tracing.batch({
      pipeline: 'embed',
      shard: 'cpu',
      traces: [tracing.contextOf(record), tracing.contextOf(other)],
      enqueuedAt: [10, 12],
      paddedTokens: 64,
      startedAt: 20,
      endedAt: 50,
    });
    const output: OutputRecord = {
      key: null,
      value: Buffer.from('{}'),
      headers: { ...record.headers },
      origin: record.origin,
    };
    const sent = tracing.sending(output, 'out-topic');
    sent();
    tracing.finished(record.origin, 'written');

    const spans = exporter.getFinishedSpans();
    const process = spans.find(
      (s) => s.name === 'process events' && s.attributes['messaging.kafka.offset'] === 41,
    );
    expect(process).toBeDefined();
    expect(process?.kind).toBe(SpanKind.CONSUMER);
    expect(process?.spanContext().traceId).toBe(INCOMING_TRACE);
    expect(process?.parentSpanContext?.spanId).toBe(INCOMING_SPAN);
    expect(process?.attributes['messaging.system']).toBe('kafka');
    expect(process?.attributes['messaging.destination.partition.id']).toBe('2');
    expect(process?.attributes['hugot.outcome']).toBe('written');

    const mine = spans.filter((s) => s.spanContext().traceId === INCOMING_TRACE);
    const names = mine.map((s) => s.name).sort();
    expect(names).toEqual(['infer embed', 'process events', 'queue embed', 'send out-topic']);
    for (const child of mine.filter((s) => s.name !== 'process events'))
      expect(child.parentSpanContext?.spanId).toBe(process?.spanContext().spanId);
    const queue = mine.find((s) => s.name === 'queue embed');
    expect(queue?.startTime).toEqual([1_700_000_000, 10_000_000]);
    expect(queue?.endTime).toEqual([1_700_000_000, 20_000_000]);

    // One batch span of its own, linked to both records' process spans.
    const batch = spans.find((s) => s.name === 'infer embed' && s.parentSpanContext === undefined);
    expect(batch?.links.map((l) => l.context.spanId)).toHaveLength(2);
    expect(batch?.attributes['hugot.batch.size']).toBe(2);

    const send = mine.find((s) => s.name === 'send out-topic');
    expect(send?.kind).toBe(SpanKind.PRODUCER);
    expect(output.headers['traceparent']).toBe(
      `00-${INCOMING_TRACE}-${send?.spanContext().spanId}-01`,
    );
  });

  it('starts a new trace for a record without traceparent and records a failed write', () => {
    const { tracing, exporter } = setup();
    const record = kafkaRecord('7');
    tracing.received('r', record);
    tracing.finished(record.origin, 'failed', new Error('sink down'));
    const [span] = exporter.getFinishedSpans();
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.status.code).toBe(2);
    expect(span?.status.message).toBe('sink down');
  });

  it('makes no batch span when no record in it is traced', () => {
    const { tracing, exporter } = setup();
    tracing.batch({
      pipeline: 'p',
      shard: 'cpu',
      traces: [undefined],
      enqueuedAt: [0],
      paddedTokens: 1,
      startedAt: 1,
      endedAt: 2,
    });
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
