// output.vectors on a route: the embedding in the record is the encoded form, the headers say
// which, a per-token result has each token encoded, and a vector shorter than `dimensions` is this
// record's dead letter, not the worker's crash.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { RecordProcessor, type Submit } from '../../../src/route/processor.ts';
import type { SourceRecord } from '../../../src/route/record.ts';
import { encodeVector, type Int8Vector } from '../../../src/route/vector-encoding.ts';
import { vectorShaper } from '../../../src/route/vector-output.ts';
import { VectorBytes } from '../../../src/schema/vector-bytes.ts';

function routeWith(output: string, options = '') {
  const config = parseConfigText(
    `
models: { m: { path: x } }
pipelines: { p: { task: featureExtraction, model: m${options} } }
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
    output: ${output}
    sink: { type: file, path: out.jsonl }
`,
    {},
  );
  return { route: config.routes[0] as (typeof config.routes)[number], limits: config.limits };
}

const record = (text: string): SourceRecord => ({
  value: Buffer.from(JSON.stringify({ id: 1, text })),
  key: null,
  headers: { trace: 'abc' },
  origin: { kind: 'file', path: 'in.jsonl', line: 1 },
});

/** A unit vector whose values all differ, as a pooled, normalised embedding is. */
function unitVector(length: number): Float32Array {
  const v = Float32Array.from({ length }, (_, i) => Math.sin(i + 1));
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

async function run(output: string, result: unknown, options = '') {
  const { route, limits } = routeWith(output, options);
  const submit: Submit = () => Promise.resolve(result);
  return new RecordProcessor(route, 'featureExtraction', limits, submit, {}).process(
    record('hello'),
  );
}

describe('output.vectors on a route', () => {
  it('merges the encoded embedding at the output field and names encoding and dimensions in headers', async () => {
    const vector = unitVector(32);
    const outcome = await run(
      '{ field: embedding, vectors: { encoding: base64-f16, dimensions: 16 } }',
      vector,
    );
    expect(outcome.kind).toBe('output');
    if (outcome.kind !== 'output') return;
    const value = JSON.parse(outcome.record.value.toString()) as Record<string, unknown>;
    const expected = encodeVector(vector, { encoding: 'base64-f16', dimensions: 16 }).json;
    expect(value).toEqual({ id: 1, text: 'hello', embedding: expected });
    expect(Buffer.from(value['embedding'] as string, 'base64').length).toBe(16 * 2);
    expect(outcome.record.headers).toEqual({
      trace: 'abc',
      'x-hugot-vector-encoding': 'base64-f16',
      'x-hugot-vector-dimensions': '16',
    });
  });

  it('writes int8 as {int8, scale} and json as numbers, truncated the same way', async () => {
    const vector = unitVector(8);
    const int8 = await run('{ mode: result, vectors: { encoding: int8 } }', vector);
    if (int8.kind !== 'output') throw new Error(int8.kind);
    const written = JSON.parse(int8.record.value.toString()) as { int8: number[]; scale: number };
    expect(written.int8).toHaveLength(8);
    written.int8.forEach((q, i) =>
      expect(Math.abs(q * written.scale - (vector[i] as number))).toBeLessThanOrEqual(
        written.scale / 2 + 1e-9,
      ),
    );
    const json = await run('{ mode: result, vectors: { dimensions: 4 } }', vector);
    if (json.kind !== 'output') throw new Error(json.kind);
    const cut = JSON.parse(json.record.value.toString()) as number[];
    expect(cut).toHaveLength(4);
    expect(Math.hypot(...cut)).toBeCloseTo(1, 6);
    expect(json.record.headers['x-hugot-vector-encoding']).toBe('json');
  });

  it("encodes each token's vector of an unpooled result, in Python's [[...]] nesting", async () => {
    const tokens = [unitVector(8), unitVector(8).map((x) => -x)];
    const outcome = await run('{ mode: result, vectors: { encoding: binary } }', tokens);
    if (outcome.kind !== 'output') throw new Error(outcome.kind);
    const written = JSON.parse(outcome.record.value.toString()) as string[][];
    expect(written).toEqual([
      tokens.map((t) => encodeVector(t, { encoding: 'binary' }).json as string),
    ]);
    expect(written[0]?.[0]).not.toBe(written[0]?.[1]);
  });

  it('dead-letters a record whose vector is shorter than dimensions, naming both sizes', async () => {
    const outcome = await run('{ vectors: { dimensions: 64 } }', unitVector(32));
    expect(outcome.kind).toBe('dead');
    if (outcome.kind !== 'dead') return;
    expect(outcome.code).toBe('VECTOR_TOO_SHORT');
    expect(outcome.message).toContain('32 values, fewer than output.vectors.dimensions (64)');
    expect(outcome.record.headers['hugot.error.stage']).toBe('output');
  });

  it('leaves records and headers as before without output.vectors', async () => {
    const vector = unitVector(4);
    const outcome = await run('{ mode: result }', vector);
    if (outcome.kind !== 'output') throw new Error(outcome.kind);
    expect(JSON.parse(outcome.record.value.toString())).toEqual(Array.from(vector));
    expect(outcome.record.headers).toEqual({ trace: 'abc' });
  });

  it('keeps bytes encodings as raw bytes for a schema output, the JSON form unchanged', () => {
    const vector = unitVector(12);
    for (const encoding of ['base64-f32', 'base64-f16', 'binary'] as const) {
      const shaped = vectorShaper({ encoding }, { bytes: true })({ embedding: vector });
      const held = (shaped.result as { embedding: unknown }).embedding;
      expect(held).toBeInstanceOf(VectorBytes);
      const expected = encodeVector(vector, { encoding });
      expect(Buffer.from((held as VectorBytes).bytes)).toEqual(Buffer.from(expected.bytes));
      expect((held as VectorBytes).json()).toBe(expected.json);
      expect(shaped.headers['x-hugot-vector-encoding']).toBe(encoding);
    }
    const int8 = vectorShaper({ encoding: 'int8' }, { bytes: true })(vector).result as {
      int8: VectorBytes;
      scale: number;
    };
    const expected = encodeVector(vector, { encoding: 'int8' }).json as Int8Vector;
    expect(int8.int8.signed).toBe(true);
    expect(int8.int8.json()).toEqual(expected.int8);
    expect(int8.scale).toBe(expected.scale);
    // json stays numbers: an array of float in every schema format.
    expect(vectorShaper({ encoding: 'json' }, { bytes: true })(vector).result).toEqual(
      Array.from(vector),
    );
  });
});
