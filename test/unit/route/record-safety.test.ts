// One record can never take the worker or its partition down: poison pills (deep nesting, results
// that cannot be serialised) end in that record's dead letter; merge mode keeps the input's bytes;
// headers travel as they came; every text-bearing field and list has a limit.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { RecordProcessor, type Outcome, type Submit } from '../../../src/route/processor.ts';
import { envelopeHeaders } from '../../../src/route/headers.ts';
import type { SourceRecord } from '../../../src/route/record.ts';

function setup(routeYaml: string, task = 'textClassification', limits = '{}') {
  const config = parseConfigText(
    `
models: { m: { path: x } }
pipelines: { p: { task: ${task}, model: m } }
limits: ${limits}
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
${routeYaml}
    sink: { type: file, path: out.jsonl }
`,
    {},
  );
  const route = config.routes[0] as (typeof config.routes)[number];
  return (submit: Submit) => new RecordProcessor(route, task, config.limits, submit);
}

function record(value: string | Buffer, headers: SourceRecord['headers'] = {}): SourceRecord {
  return {
    value: typeof value === 'string' ? Buffer.from(value) : value,
    key: null,
    headers,
    origin: { kind: 'file', path: 'in.jsonl', line: 1 },
  };
}

const label: Submit = () => Promise.resolve([{ label: 'ok', score: 0.5 }]);

function expectDead(outcome: Outcome, stage: string, code: string, source: SourceRecord): void {
  expect(outcome.kind).toBe('dead');
  if (outcome.kind !== 'dead') return;
  expect(outcome.code).toBe(code);
  expect(outcome.record.headers['hugot.error.stage']).toBe(stage);
  expect(outcome.record.value.equals(source.value)).toBe(true);
  expect(String(outcome.record.headers['hugot.error.message']).length).toBeGreaterThan(10);
}

describe('poison pills end in their own dead letter', () => {
  const deep = (depth: number): string =>
    `{"text":"hi","x":${'['.repeat(depth)}${']'.repeat(depth)}}`;

  it('dead-letters JSON nested 10,000 levels before parsing it (merge mode would overflow the stack)', async () => {
    const processor = setup('    input: { field: text }')(label);
    const pill = record(deep(10_000));
    expectDead(await processor.process(pill), 'decode', 'JSON_TOO_DEEP', pill);
    // Within the limit the same shape is processed.
    const fine = await processor.process(record(deep(10)));
    expect(fine.kind).toBe('output');
  });

  it('honours limits.maxJsonDepth', async () => {
    const processor = setup(
      '    input: { field: text }',
      'textClassification',
      '{ maxJsonDepth: 3 }',
    )(label);
    expect((await processor.process(record('{"text":"a","b":[[1]]}'))).kind).toBe('output');
    expect(await processor.process(record('{"text":"a","b":[[[1]]]}'))).toMatchObject({
      kind: 'dead',
      code: 'JSON_TOO_DEEP',
    });
  });

  it('dead-letters a result that cannot be written as JSON, at the output stage', async () => {
    const processor = setup('    input: { field: text }')(() => Promise.resolve({ n: 10n }));
    const source = record('{"text":"hi"}');
    expectDead(await processor.process(source), 'output', 'INTERNAL', source);
  });

  it('dead-letters an unexpected throw of the submit (not a HugotError), at the inference stage', async () => {
    const processor = setup('    input: { field: text }')(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    const source = record('{"text":"hi"}');
    expectDead(await processor.process(source), 'inference', 'INTERNAL', source);
  });
});

describe('merge mode keeps the input faithfully', () => {
  it('leaves 64-bit ids, 1e400, spacing and escapes as they were', async () => {
    const processor = setup('    output: { field: labels }')(label);
    const text = '{"id": 12345678901234567890, "big": 1e400, "text": "caf\\u00e9",  "x": 1.50}';
    const outcome = await processor.process(record(text));
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    expect(outcome.record.value.toString()).toBe(
      '{"id": 12345678901234567890, "big": 1e400, "text": "caf\\u00e9",  "x": 1.50,"labels":[{"label":"ok","score":0.5}]}',
    );
  });

  it('drops a leading byte-order mark from the output (JSON must not start with one), not from a dead letter', async () => {
    const processor = setup('    output: { field: labels }')(label);
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"text":"hi"}')]);
    const outcome = await processor.process({ ...record('{}'), value: bytes });
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    expect(outcome.record.value.toString('latin1')).toBe(
      '{"text":"hi","labels":[{"label":"ok","score":0.5}]}',
    );
    const bad = Buffer.concat([bytes.subarray(0, 3), Buffer.from('{"text":')]);
    const dead = await processor.process({ ...record('{}'), value: bad });
    expect(dead.kind).toBe('dead');
    if (dead.kind === 'dead') expect(dead.record.value.equals(bad)).toBe(true);
  });

  it('refuses to overwrite an existing output field unless output.overwrite is set', async () => {
    const text = '{"text":"hi","labels":"mine"}';
    const refused = await setup('    output: { field: labels }')(label).process(record(text));
    expectDead(refused, 'output', 'OUTPUT_FIELD_EXISTS', record(text));
    if (refused.kind === 'dead')
      expect(refused.record.headers['hugot.error.message']).toContain('output.overwrite');
    const replaced = await setup('    output: { field: labels, overwrite: true }')(label).process(
      record(text),
    );
    expect(replaced.kind === 'output' && replaced.record.value.toString()).toBe(
      '{"text":"hi","labels":[{"label":"ok","score":0.5}]}',
    );
  });

  it('dead-letters a record that is not an object at the output stage', async () => {
    const source = record('["a"]');
    const outcome = await setup('    input: { field: "0" }')(label).process(source);
    expectDead(outcome, 'output', 'NOT_AN_OBJECT', source);
  });
});

describe('headers travel as they came', () => {
  const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80]);
  const headers = { bin: binary, twice: [Buffer.from('a'), Buffer.from('b')], text: 't' };

  it('keeps byte values and repeated headers on the output', async () => {
    const outcome = await setup('')(label).process(record('{"text":"hi"}', headers));
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    expect(outcome.record.headers).toEqual(headers);
    expect((outcome.record.headers['bin'] as Buffer).equals(binary)).toBe(true);
  });

  it('keeps them on the dead letter next to the error headers', async () => {
    const outcome = await setup('')(label).process(record('{"text":', headers));
    expect(outcome.kind).toBe('dead');
    if (outcome.kind !== 'dead') return;
    expect(outcome.record.headers).toMatchObject(headers);
    expect(outcome.record.headers['hugot.error.code']).toBe('INVALID_JSON');
  });
});

describe('limits on every text-bearing field', () => {
  const limits = '{ maxTextLength: 10, maxListItems: 3, maxStopSequences: 2 }';

  it.each([
    ['questionAnswering', { question: 'q'.repeat(11), context: 'c' }, 'question'],
    ['questionAnswering', { question: 'q', context: 'c'.repeat(11) }, 'context'],
    ['crossEncoder', { query: 'q'.repeat(11), documents: ['d'] }, 'query'],
    ['crossEncoder', { query: 'q', documents: ['d', 'd'.repeat(11)] }, 'documents[1]'],
    ['crossEncoder', { query: 'q', documents: ['a', 'b', 'c', 'd'] }, 'maxListItems'],
    ['textGeneration', [{ role: 'user', content: 'u'.repeat(11) }], '[0].content'],
    [
      'textGeneration',
      { messages: [1, 2, 3, 4].map(() => ({ role: 'user', content: 'u' })) },
      'maxListItems',
    ],
    ['textClassification', { text: 't', textPair: 'p'.repeat(11) }, 'textPair'],
  ])('%s: %j is refused (%s)', async (task, input, says) => {
    let called = false;
    const processor = setup(
      '',
      task,
      limits,
    )(() => {
      called = true;
      return Promise.resolve('x');
    });
    const source = record(JSON.stringify({ text: input }));
    const outcome = await processor.process(source);
    expectDead(outcome, 'validate', 'TOO_LARGE', source);
    if (outcome.kind === 'dead') expect(outcome.message).toContain(says);
    expect(called).toBe(false);
  });

  it('holds a record of its own generation options to limits.maxStopSequences', async () => {
    const config = parseConfigText(
      `
models: { m: { path: x } }
pipelines: { p: { task: textGeneration, model: m, generative: {} } }
limits: ${limits}
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
    input: { field: prompt }
    generation: { optionsField: options }
    sink: { type: file, path: out.jsonl }
`,
      {},
    );
    const route = config.routes[0] as (typeof config.routes)[number];
    const processor = new RecordProcessor(route, 'textGeneration', config.limits, () =>
      Promise.resolve('x'),
    );
    const ok = { prompt: 'p', options: { stopSequences: ['a', 'b'] } };
    expect((await processor.process(record(JSON.stringify(ok)))).kind).toBe('output');
    const many = record(
      JSON.stringify({ prompt: 'p', options: { stopSequences: ['a', 'b', 'c'] } }),
    );
    expectDead(await processor.process(many), 'validate', 'TOO_LARGE', many);
    const long = record(
      JSON.stringify({ prompt: 'p', options: { stopSequences: ['s'.repeat(11)] } }),
    );
    expectDead(await processor.process(long), 'validate', 'TOO_LARGE', long);
  });
});

describe('headers in JSON envelopes (file and BullMQ dead letters)', () => {
  it('keeps text headers readable, repeated ones as arrays, and bytes in base64', () => {
    const binary = Buffer.from([0xff, 0x00, 0xfe]);
    expect(
      envelopeHeaders({ a: 'x', b: Buffer.from('y'), twice: ['1', Buffer.from('2')], bin: binary }),
    ).toEqual({
      headers: { a: 'x', b: 'y', twice: ['1', '2'] },
      headersBase64: { bin: binary.toString('base64') },
    });
    expect(envelopeHeaders({ a: 'x' })).toEqual({ headers: { a: 'x' } });
  });
});
