// An output the sink cannot take goes to the DLQ with the reason, before it is written: never a
// stalled partition, never earlier outputs written again.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import type { KafkaProducerDriver, ProducedMessage } from '../../../src/connectors/kafka/driver.ts';
import { OutputRejectedError } from '../../../src/errors.ts';
import { silentLogger } from '../../../src/logger.ts';
import { KafkaSink } from '../../../src/connectors/kafka/kafka-sink.ts';
import type { ConnectionHealth } from '../../../src/connectors/connection-health.ts';
import type { Sink } from '../../../src/route/sink.ts';
import { RecordProcessor, type Submit } from '../../../src/route/processor.ts';
import type { OutputRecord, SourceRecord } from '../../../src/route/record.ts';
import { RouteRunner } from '../../../src/route/route-runner.ts';

const config = parseConfigText(
  `
models: { m: { path: x } }
pipelines: { p: { task: featureExtraction, model: m } }
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
    output: { mode: result }
    sink: { type: file, path: out.jsonl }
`,
  {},
);
const route = config.routes[0] as (typeof config.routes)[number];

class MemorySink implements Sink {
  readonly written: OutputRecord[] = [];
  readonly maxRecordBytes: number | undefined;
  fail: Error | undefined;
  constructor(maxRecordBytes?: number) {
    this.maxRecordBytes = maxRecordBytes;
  }
  write(record: OutputRecord): Promise<void> {
    if (this.fail !== undefined) return Promise.reject(this.fail);
    this.written.push(record);
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

function runner(sink: Sink, dlq: Sink, submit: Submit): RouteRunner {
  return new RouteRunner({
    name: 'r',
    processor: new RecordProcessor(route, 'featureExtraction', config.limits, submit),
    sink,
    dlq,
    retries: 0,
    logger: silentLogger,
  });
}

const record = (text: string): SourceRecord => ({
  value: Buffer.from(JSON.stringify({ text })),
  key: Buffer.from('k'),
  headers: { trace: 't' },
  origin: { kind: 'kafka', topic: 'in', partition: 0, offset: '7' },
});

// An "embedding" whose size grows with the text.
const embed: Submit = (_, input) =>
  Promise.resolve(new Float32Array(String(input).length * 100).fill(0.123456));

describe('output size against the sink limit', () => {
  it('dead-letters an output over the sink limit with the reason, and writes the next one', async () => {
    const sink = new MemorySink(4096);
    const dlq = new MemorySink();
    const route = runner(sink, dlq, embed);
    const big = record('x'.repeat(40));
    expect(await route.handle(big)).toMatchObject({
      kind: 'dead-lettered',
      code: 'OUTPUT_TOO_LARGE',
    });
    expect(await route.handle(record('x'))).toMatchObject({ kind: 'written' });
    expect(sink.written).toHaveLength(1);
    expect(dlq.written).toHaveLength(1);
    const letter = dlq.written[0] as OutputRecord;
    expect(letter.value.equals(big.value)).toBe(true);
    expect(letter.key?.toString()).toBe('k');
    expect(letter.headers).toMatchObject({
      trace: 't',
      'hugot.error.stage': 'sink',
      'hugot.error.code': 'OUTPUT_TOO_LARGE',
      'hugot.error.origin.offset': '7',
    });
    expect(String(letter.headers['hugot.error.message'])).toContain('4096');
  });

  it('dead-letters an output the sink rejects for what it is; other sink failures still reject', async () => {
    const sink = new MemorySink();
    const dlq = new MemorySink();
    const route = runner(sink, dlq, embed);
    sink.fail = new OutputRejectedError('the broker refused it');
    expect(await route.handle(record('a'))).toMatchObject({
      kind: 'dead-lettered',
      code: 'OUTPUT_REJECTED',
    });
    expect(dlq.written[0]?.headers['hugot.error.stage']).toBe('sink');
    sink.fail = new Error('broker down');
    await expect(route.handle(record('a'))).rejects.toThrow('broker down');
  });
});

class FakeProducer implements KafkaProducerDriver {
  readonly sends: ProducedMessage[][] = [];
  readonly accepted: string[] = [];
  /** Refuses a send holding a message over this many value bytes, as a broker does. */
  private readonly refuseOver: number;
  constructor(refuseOver: number) {
    this.refuseOver = refuseOver;
  }
  connect(): Promise<void> {
    return Promise.resolve();
  }
  /** Fails every send as a client does with its broker gone. */
  down = false;
  send(_topic: string, messages: ProducedMessage[]): Promise<void> {
    this.sends.push(messages);
    if (this.down)
      return Promise.reject(
        Object.assign(new Error('Connection refused'), { name: 'KafkaJSConnectionError' }),
      );
    if (messages.some((m) => (m.value?.length ?? 0) > this.refuseOver)) {
      const protocol = Object.assign(new Error('MESSAGE_TOO_LARGE'), { type: 'MESSAGE_TOO_LARGE' });
      return Promise.reject(
        new Error(
          'The request included a message larger than the max message size the server will accept',
          { cause: protocol },
        ),
      );
    }
    this.accepted.push(...messages.map((m) => String(m.value)));
    return Promise.resolve();
  }
  disconnect(): Promise<void> {
    return Promise.resolve();
  }
}

const out = (value: string): OutputRecord => ({
  key: null,
  value: Buffer.from(value),
  headers: {},
  origin: { kind: 'file', path: 'x', line: 1 },
});

describe('Kafka sink', () => {
  it('bounds each send by bytes as well as by count', async () => {
    const producer = new FakeProducer(Infinity);
    const sink = new KafkaSink('t', producer, { maxRecordBytes: 2048 });
    await Promise.all(Array.from({ length: 10 }, (_, i) => sink.write(out(`${i}`.padEnd(500)))));
    expect(producer.accepted).toHaveLength(10);
    expect(producer.sends.length).toBeGreaterThan(2);
    for (const send of producer.sends)
      expect(send.reduce((n, m) => n + (m.value?.length ?? 0), 0)).toBeLessThanOrEqual(2048);
  });

  it('rejects only the output the broker refuses, without sending the others twice', async () => {
    const producer = new FakeProducer(100);
    const sink = new KafkaSink('t', producer);
    const results = await Promise.allSettled(
      ['a', 'b'.repeat(200), 'c'].map((v) => sink.write(out(v))),
    );
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(OutputRejectedError);
    expect(producer.accepted).toEqual(['a', 'c']);
  });

  it('reports a send that fails for the connection as an outage, and the next good send its end', async () => {
    const producer = new FakeProducer(Infinity);
    const reports: ConnectionHealth[] = [];
    const sink = new KafkaSink('t', producer, { onHealth: (h) => reports.push(h) });
    producer.down = true;
    await expect(sink.write(out('a'))).rejects.toThrow('Connection refused');
    await expect(sink.write(out('b'))).rejects.toThrow('Connection refused');
    expect(reports.map((r) => (r.state === 'degraded' ? r.attempt : r.state))).toEqual([1, 2]);
    expect(reports[0]).toMatchObject({ reason: 'Kafka unreachable (topic t): Connection refused' });
    producer.down = false;
    await sink.write(out('c'));
    await sink.write(out('d'));
    expect(reports.at(-1)).toEqual({ state: 'healthy' });
    expect(reports).toHaveLength(3);
    expect(producer.accepted).toEqual(['c', 'd']);
  });

  it('a refused output is no outage', async () => {
    const producer = new FakeProducer(10);
    const reports: ConnectionHealth[] = [];
    const sink = new KafkaSink('t', producer, { onHealth: (h) => reports.push(h) });
    await expect(sink.write(out('x'.repeat(20)))).rejects.toBeInstanceOf(OutputRejectedError);
    expect(reports).toEqual([]);
  });
});
