import { describe, expect, it } from 'vitest';
import { InferenceError, OutputRejectedError, SinkError } from '../../../src/errors.ts';
import { silentLogger, type Logger } from '../../../src/logger.ts';
import type { Outcome, RecordProcessor } from '../../../src/route/processor.ts';
import type { OutputRecord, SourceRecord } from '../../../src/route/record.ts';
import { RouteRunner } from '../../../src/route/route-runner.ts';
import type { Sink } from '../../../src/route/sink.ts';
import { DLQ_HEADER_PREFIX } from '../../../src/route/dead-letter.ts';

const record = (line: number, text = `record ${line}`): SourceRecord => ({
  value: Buffer.from(text),
  key: null,
  headers: { trace: 'abc' },
  origin: { kind: 'file', path: 'in.jsonl', line },
});

class MemorySink implements Sink {
  readonly written: OutputRecord[] = [];
  failWith: Error | undefined;
  readonly maxRecordBytes: number | undefined;
  constructor(maxRecordBytes?: number) {
    this.maxRecordBytes = maxRecordBytes;
  }
  write(output: OutputRecord): Promise<void> {
    if (this.failWith !== undefined) return Promise.reject(this.failWith);
    this.written.push(output);
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Answers with the outcomes given, in turn, and counts the calls. */
function scripted(...outcomes: ((r: SourceRecord) => Outcome)[]): RecordProcessor & {
  calls: number;
} {
  const fake = {
    calls: 0,
    process(r: SourceRecord): Promise<Outcome> {
      const next = outcomes[Math.min(fake.calls, outcomes.length - 1)];
      fake.calls += 1;
      if (next === undefined) return Promise.reject(new Error('no outcome scripted'));
      return Promise.resolve(next(r));
    },
  };
  return fake as unknown as RecordProcessor & { calls: number };
}

const output =
  (text: string) =>
  (source: SourceRecord): Outcome => ({
    kind: 'output',
    record: { key: null, value: Buffer.from(text), headers: {}, origin: source.origin },
    result: text,
    source,
  });
const retry = (): Outcome => ({ kind: 'retry', error: new InferenceError('thread crashed') });

function runner(
  processor: RecordProcessor,
  sink: Sink | undefined,
  dlq: Sink | undefined,
  logger: Logger = silentLogger,
): RouteRunner {
  return new RouteRunner({ name: 'r', processor, sink, dlq, retries: 2, logger });
}

const header = (out: OutputRecord, name: string): unknown =>
  out.headers[`${DLQ_HEADER_PREFIX}${name}`];

describe('RouteRunner', () => {
  it('writes an output to the sink and counts it', async () => {
    const sink = new MemorySink();
    const dlq = new MemorySink();
    const route = runner(scripted(output('ok')), sink, dlq);
    const handled = await route.handle(record(1));
    expect(handled.kind).toBe('written');
    expect(sink.written.map((r) => r.value.toString())).toEqual(['ok']);
    expect(dlq.written).toHaveLength(0);
    expect(route.counters).toEqual({
      received: 1,
      written: 1,
      deadLettered: 0,
      retried: 0,
      truncated: 0,
    });
  });

  it('retries a retriable failure and writes the record once it succeeds', async () => {
    const sink = new MemorySink();
    const processor = scripted(retry, output('second try'));
    const route = runner(processor, sink, new MemorySink());
    await route.handle(record(2));
    expect(processor.calls).toBe(2);
    expect(sink.written.map((r) => r.value.toString())).toEqual(['second try']);
    expect(route.counters.retried).toBe(1);
  });

  it('dead-letters the untouched record with its reason once the retries run out', async () => {
    const sink = new MemorySink();
    const dlq = new MemorySink();
    const processor = scripted(retry);
    const route = runner(processor, sink, dlq);
    const handled = await route.handle(record(3, 'original bytes'));
    expect(processor.calls).toBe(3);
    expect(handled).toMatchObject({ kind: 'dead-lettered', code: 'INFERENCE_FAILED' });
    expect(sink.written).toHaveLength(0);
    const [dead] = dlq.written;
    expect(dead?.value.toString()).toBe('original bytes');
    expect(dead?.headers['trace']).toBe('abc');
    expect(header(dead as OutputRecord, 'stage')).toBe('inference');
    expect(String(header(dead as OutputRecord, 'message'))).toMatch(
      /failed after 2 retries: thread crashed/,
    );
    expect(header(dead as OutputRecord, 'origin.line')).toBe('3');
    expect(route.counters).toMatchObject({ received: 1, deadLettered: 1, retried: 2 });
  });

  it('dead-letters at the sink stage an output over the sink limit, without trying to write it', async () => {
    const sink = new MemorySink(200);
    const dlq = new MemorySink();
    const route = runner(scripted(output('x'.repeat(500))), sink, dlq);
    const handled = await route.handle(record(4));
    expect(handled).toMatchObject({ kind: 'dead-lettered', code: 'OUTPUT_TOO_LARGE' });
    expect(sink.written).toHaveLength(0);
    expect(header(dlq.written[0] as OutputRecord, 'stage')).toBe('sink');
  });

  it('dead-letters an output the sink refuses for what it is, and keeps going', async () => {
    const sink = new MemorySink();
    sink.failWith = new OutputRejectedError('not a valid Redis stream field');
    const dlq = new MemorySink();
    const route = runner(scripted(output('bad')), sink, dlq);
    expect(await route.handle(record(5))).toMatchObject({
      kind: 'dead-lettered',
      code: 'OUTPUT_REJECTED',
    });
    sink.failWith = undefined;
    expect((await route.handle(record(6))).kind).toBe('written');
  });

  it('rejects (so the record is not acknowledged) when the sink itself fails', async () => {
    const sink = new MemorySink();
    sink.failWith = new SinkError('broker unreachable');
    const dlq = new MemorySink();
    const route = runner(scripted(output('ok')), sink, dlq);
    await expect(route.handle(record(7))).rejects.toBeInstanceOf(SinkError);
    expect(dlq.written).toHaveLength(0);
    expect(route.counters.deadLettered).toBe(0);
  });

  it('turns a processor bug into an INTERNAL dead letter instead of stopping the route', async () => {
    const dlq = new MemorySink();
    const broken = {
      process(): Promise<Outcome> {
        return Promise.reject(new TypeError('undefined is not a function'));
      },
    } as unknown as RecordProcessor;
    const handled = await runner(broken, new MemorySink(), dlq).handle(record(8));
    expect(handled).toMatchObject({ kind: 'dead-lettered', code: 'INTERNAL' });
    expect(String(header(dlq.written[0] as OutputRecord, 'message'))).toMatch(/undefined is not/);
  });

  it('without a DLQ logs the refusal but not the record bytes unless asked', async () => {
    const lines: { obj: Record<string, unknown>; msg: string }[] = [];
    const logger = {
      ...silentLogger,
      error: (obj: Record<string, unknown>, msg: string) => lines.push({ obj, msg }),
    } as unknown as Logger;
    const route = runner(scripted(retry), new MemorySink(), undefined, logger);
    await route.handle(record(9, 'secret text'));
    expect(lines).toHaveLength(1);
    expect(lines[0]?.msg).toMatch(/record refused/);
    expect(JSON.stringify(lines[0]?.obj)).not.toContain(
      Buffer.from('secret text').toString('base64'),
    );
    expect(lines[0]?.obj['bytes']).toBe(11);
  });
});
