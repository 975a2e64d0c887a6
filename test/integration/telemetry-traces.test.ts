// Traces from a real worker process to an OTLP/HTTP receiver the test runs: every record's trace
// links consume -> inference batch -> produce, the output record's traceparent carries that
// trace on, and a record that arrives with a traceparent continues its caller's trace.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import {
  startOtlpReceiver,
  type OtlpReceiver,
  type ReceivedSpan,
} from './helpers/otlp-receiver.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const RECORDS = 40;
/** Every CALLED-th record comes with a caller's traceparent. */
const CALLED = 4;
const CONSUMER = 5;
const PRODUCER = 4;

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver.close();
});

function parseTraceparent(value: string | undefined): { traceId: string; spanId: string } {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(value ?? '');
  if (match === null) throw new Error(`not a W3C traceparent: ${value}`);
  return { traceId: match[1] ?? '', spanId: match[2] ?? '' };
}

describe('traces exported over OTLP/HTTP', () => {
  it('one trace per record: consume -> batch -> produce, carried by the output', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
    ]);
    const callers = new Map<string, { traceId: string; spanId: string }>();
    const messages = corpusRecords(RECORDS).map((r, i) => {
      if (i % CALLED !== 0) return { partition: 0, key: r.id, value: JSON.stringify(r) };
      const caller = {
        traceId: randomBytes(16).toString('hex'),
        spanId: randomBytes(8).toString('hex'),
      };
      callers.set(r.id, caller);
      return {
        partition: 0,
        key: r.id,
        value: JSON.stringify(r),
        headers: { traceparent: `00-${caller.traceId}-${caller.spanId}-01` },
      };
    });
    await kit.produce(input, messages);
    const worker = startWorkerProcess({
      ...kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId }),
      telemetry: { tracing: { endpoint: receiver.url, serviceName: 'hugot-traces-test' } },
    });
    let outputs;
    try {
      outputs = await kit.readAll(output, { count: RECORDS, stallMs: 180_000 });
      // Every record's send span reaches the receiver (the exporter sends every few seconds).
      const sendIds = new Set(
        outputs.map((o) => parseTraceparent(o.headers['traceparent']).spanId),
      );
      await waitForProgress(() => receiver.spans.filter((s) => sendIds.has(s.spanId)).length, {
        what: 'send spans of every output at the receiver',
        done: (n) => n === RECORDS,
        stallMs: 60_000,
        abort: worker.gone,
        context: () => `${receiver.errors.join('\n')}\n${worker.output().slice(-3000)}`,
      });
    } finally {
      worker.child.kill('SIGTERM');
      await worker.exited;
    }
    expect(receiver.errors).toEqual([]);
    expect(outputs).toHaveLength(RECORDS);

    const byId = new Map<string, ReceivedSpan>(receiver.spans.map((s) => [s.spanId, s]));
    const batchSpans = receiver.spans.filter(
      (s) => s.name === 'infer classify' && s.parentSpanId === undefined,
    );
    expect(batchSpans.length).toBeGreaterThan(0);
    expect(new Set(outputs.map((o) => o.key)).size).toBe(RECORDS);

    for (const out of outputs) {
      const carried = parseTraceparent(out.headers['traceparent']);
      // produce: the output's traceparent is its send span, a producer span under the record's
      // process span, in the same trace.
      const send = byId.get(carried.spanId);
      expect(send, `send span of ${out.key}`).toBeDefined();
      expect(send?.traceId).toBe(carried.traceId);
      expect(send?.name).toBe(`send ${output}`);
      expect(send?.kind).toBe(PRODUCER);
      // consume: the process span, a consumer span with the record's offset.
      const processSpan = byId.get(send?.parentSpanId ?? '');
      expect(processSpan?.name).toBe(`process ${input}`);
      expect(processSpan?.kind).toBe(CONSUMER);
      expect(processSpan?.traceId).toBe(carried.traceId);
      expect(processSpan?.attributes['messaging.system']).toBe('kafka');
      expect(typeof processSpan?.attributes['messaging.kafka.offset']).toBe('number');
      // inference batch: the record's own infer span is a child of its process span and links
      // to the batch span, which links back to the process span.
      const infer = receiver.spans.filter(
        (s) => s.parentSpanId === processSpan?.spanId && s.name === 'infer classify',
      );
      expect(infer).toHaveLength(1);
      const batch = byId.get(infer[0]?.links[0]?.spanId ?? '');
      expect(batch).toBeDefined();
      expect(batchSpans).toContain(batch);
      expect(batch?.links).toContainEqual({
        traceId: carried.traceId,
        spanId: processSpan?.spanId,
      });
      expect(Number(batch?.attributes['hugot.batch.size'])).toBe(batch?.links.length);
      // A caller's trace continues: same trace id, the process span under the caller's span.
      const caller = callers.get(out.key ?? '');
      if (caller !== undefined) {
        expect(carried.traceId).toBe(caller.traceId);
        expect(processSpan?.parentSpanId).toBe(caller.spanId);
      } else {
        expect(processSpan?.parentSpanId).toBeUndefined();
      }
    }
    // Each record has its own trace, and the callers' records are in the callers' traces.
    expect(
      new Set(outputs.map((o) => parseTraceparent(o.headers['traceparent']).traceId)).size,
    ).toBe(RECORDS);
    expect(callers.size).toBe(RECORDS / CALLED);
  });
});
