import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FileSink } from '../../../src/connectors/file/file-sink.ts';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { InferenceError, InputError, SinkError } from '../../../src/errors.ts';
import { RecordProcessor, type Submit, type SubmitContext } from '../../../src/route/processor.ts';
import type { SourceRecord } from '../../../src/route/record.ts';

const config = parseConfigText(
  `
models: { m: { path: x } }
pipelines: { p: { task: textClassification, model: m } }
limits: { maxRecordBytes: 200, maxTextLength: 50 }
routes:
  - source: { type: kafka, topic: in, groupId: g }
    pipeline: p
    input: { field: payload.text }
    output: { mode: merge, field: enrichment.label }
    sink: { type: kafka, topic: out }
connections: { kafka: { brokers: [localhost:9092] } }
`,
  {},
);
const route = config.routes[0] as (typeof config.routes)[number];

function record(value: string | Buffer): SourceRecord {
  return {
    value: typeof value === 'string' ? Buffer.from(value) : value,
    key: Buffer.from('k1'),
    headers: { trace: 'abc' },
    origin: { kind: 'kafka', topic: 'in', partition: 3, offset: '42' },
  };
}

const echo: Submit = (_, input) =>
  Promise.resolve([{ label: `len-${String(input).length}`, score: new Float32Array([0.5])[0] }]);

describe('record processor', () => {
  it('merges the result into the record at the output field, keeping key and headers', async () => {
    const outcome = await new RecordProcessor(
      route,
      'textClassification',
      config.limits,
      echo,
    ).process(record(JSON.stringify({ id: 7, payload: { text: 'hello' } })));
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    expect(JSON.parse(outcome.record.value.toString())).toEqual({
      id: 7,
      payload: { text: 'hello' },
      enrichment: { label: [{ label: 'len-5', score: 0.5 }] },
    });
    expect(outcome.record.key?.toString()).toBe('k1');
    expect(outcome.record.headers).toEqual({ trace: 'abc' });
  });

  it('drops hugot.error.* headers a record arrives with: from outputs, and from a new dead letter', async () => {
    const spoofed: SourceRecord = {
      ...record(JSON.stringify({ payload: { text: 'hello' } })),
      headers: {
        trace: 'abc',
        'hugot.error.code': 'MAX_ATTEMPTS',
        'hugot.error.origin.line': '2',
      },
    };
    const processor = new RecordProcessor(route, 'textClassification', config.limits, echo);
    const good = await processor.process(spoofed);
    expect(good.kind).toBe('output');
    if (good.kind !== 'output') return;
    expect(good.record.headers).toEqual({ trace: 'abc' });
    const bad = await processor.process({ ...spoofed, value: Buffer.from('{"payload": ') });
    expect(bad.kind).toBe('dead');
    if (bad.kind !== 'dead') return;
    expect(bad.record.headers['hugot.error.code']).toBe('INVALID_JSON');
    // This failure's origin is a Kafka offset; the stale file line must not stay beside it.
    expect(bad.record.headers['hugot.error.origin.line']).toBeUndefined();
    expect(bad.record.headers['hugot.error.origin.offset']).toBe('42');
    expect(bad.record.headers['trace']).toBe('abc');
  });

  const cases: [string, string | Buffer, string, string][] = [
    ['malformed JSON', '{"payload": ', 'decode', 'INVALID_JSON'],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), 'decode', 'INVALID_UTF8'],
    ['a missing field', JSON.stringify({ payload: {} }), 'validate', 'FIELD_MISSING'],
    ['a wrong type', JSON.stringify({ payload: { text: 12 } }), 'validate', 'WRONG_TYPE'],
    [
      'an oversized record',
      JSON.stringify({ payload: { text: 'x'.repeat(300) } }),
      'validate',
      'RECORD_TOO_LARGE',
    ],
    [
      'a text over the length limit',
      JSON.stringify({ payload: { text: 'x'.repeat(60) } }),
      'validate',
      'TOO_LARGE',
    ],
  ];
  for (const [what, value, stage, code] of cases) {
    it(`dead-letters ${what} with its original bytes and the reason`, async () => {
      let called = false;
      const submit: Submit = (...args) => {
        called = true;
        return echo(...args);
      };
      const outcome = await new RecordProcessor(
        route,
        'textClassification',
        config.limits,
        submit,
      ).process(record(value));
      expect(outcome.kind).toBe('dead');
      if (outcome.kind !== 'dead') return;
      expect(called).toBe(false);
      expect(
        outcome.record.value.equals(typeof value === 'string' ? Buffer.from(value) : value),
      ).toBe(true);
      expect(outcome.record.key?.toString()).toBe('k1');
      expect(outcome.record.headers).toMatchObject({
        trace: 'abc',
        'hugot.error.stage': stage,
        'hugot.error.code': code,
        'hugot.error.origin.topic': 'in',
        'hugot.error.origin.partition': '3',
        'hugot.error.origin.offset': '42',
      });
      expect(outcome.record.headers['hugot.error.message']?.length).toBeGreaterThan(5);
      expect(Date.parse(String(outcome.record.headers['hugot.error.time']))).not.toBeNaN();
      expect(outcome.record.headers['hugot.error.worker.id']).toMatch(/-\d+$/);
    });
  }

  it('dead-letters a tombstone as a tombstone, without running the pipeline; a file DLQ writes its value as null', async () => {
    let submitted = 0;
    const processor = new RecordProcessor(route, 'textClassification', config.limits, (...a) => {
      submitted += 1;
      return echo(...a);
    });
    const outcome = await processor.process({ ...record(Buffer.alloc(0)), tombstone: true });
    expect(submitted).toBe(0);
    expect(outcome.kind).toBe('dead');
    if (outcome.kind !== 'dead') return;
    expect(outcome.code).toBe('TOMBSTONE');
    expect(outcome.record.tombstone).toBe(true);
    expect(outcome.record.headers['hugot.error.stage']).toBe('decode');
    const path = join(mkdtempSync(join(tmpdir(), 'tombstone-')), 'dlq.jsonl');
    const dlq = new FileSink(path, true);
    await dlq.write(outcome.record);
    await dlq.close();
    const line = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    expect(line).toMatchObject({ key: 'k1', value: null });
    expect(line).not.toHaveProperty('valueBase64');
  });

  it('dead-letters an input the pipeline refuses, at the inference stage', async () => {
    const refuse: Submit = () => Promise.reject(new InputError('no mask token'));
    const outcome = await new RecordProcessor(
      route,
      'textClassification',
      config.limits,
      refuse,
    ).process(record(JSON.stringify({ payload: { text: 'ok' } })));
    expect(outcome).toMatchObject({ kind: 'dead', code: 'INPUT_INVALID' });
    if (outcome.kind === 'dead')
      expect(outcome.record.headers['hugot.error.stage']).toBe('inference');
  });

  it('hands a retriable failure back instead of dead-lettering it', async () => {
    const crash: Submit = () => Promise.reject(new InferenceError('thread died'));
    const outcome = await new RecordProcessor(
      route,
      'textClassification',
      config.limits,
      crash,
    ).process(record(JSON.stringify({ payload: { text: 'ok' } })));
    expect(outcome.kind).toBe('retry');
  });

  it('rejects on a sink failure during processing: the record is fine, only unacknowledged', async () => {
    const sinkDown: Submit = () => Promise.reject(new SinkError('partial write failed'));
    const processing = new RecordProcessor(
      route,
      'textClassification',
      config.limits,
      sinkDown,
    ).process(record(JSON.stringify({ payload: { text: 'ok' } })));
    await expect(processing).rejects.toThrow(SinkError);
  });

  it('hands the source record and its parsed JSON to the submit', async () => {
    let seen: SubmitContext | undefined;
    const spy: Submit = (_, input, context) => {
      seen = context;
      return Promise.resolve(input);
    };
    const source = record(JSON.stringify({ payload: { text: 'ok' }, id: 7 }));
    await new RecordProcessor(route, 'textClassification', config.limits, spy).process(source);
    expect(seen?.record).toBe(source);
    expect(seen?.parsed).toMatchObject({ payload: { text: 'ok' }, id: 7 });
  });
});
