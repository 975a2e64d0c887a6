// Compact vectors end to end: a file route on the committed MiniLM writes its embeddings in each
// encoding, and every one decodes back to the vector the plain JSON route writes for the same text.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readJsonl, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const dir = scratchDir('vector-route');
const TEXTS = 6;

type Written = { id: string; text: string; embedding: unknown };

const norm = (v: readonly number[]): number => Math.hypot(...v);
const cosine = (a: readonly number[], b: readonly number[]): number =>
  a.reduce((sum, x, i) => sum + x * (b[i] as number), 0) / (norm(a) * norm(b));

function float16s(b64: string): number[] {
  const bytes = Buffer.from(b64, 'base64');
  return Array.from({ length: bytes.length / 2 }, (_, i) => {
    const h = bytes.readUInt16LE(i * 2);
    const magnitude =
      ((h >> 10) & 0x1f) === 0
        ? 2 ** -14 * ((h & 0x3ff) / 1024)
        : 2 ** (((h >> 10) & 0x1f) - 15) * (1 + (h & 0x3ff) / 1024);
    return h & 0x8000 ? -magnitude : magnitude;
  });
}

describe('compact vectors on a file route', () => {
  it('writes each encoding at the output field, decoding to the JSON route’s embedding', async () => {
    const corpus = (
      await readFile(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8')
    )
      .trim()
      .split('\n')
      .slice(0, TEXTS);
    const input = dir.file('in.jsonl');
    await writeFile(input, corpus.join('\n'));
    const route = (name: string, vectors: string) => `
  - name: ${name}
    source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: embed
    output: { field: embedding${vectors === '' ? '' : `, vectors: ${vectors}`} }
    sink: { type: file, path: ${dir.quoted(`${name}.jsonl`)} }`;
    const worker = await runToEnd(`
models: { minilm: { path: ${JSON.stringify(MODEL)} } }
pipelines: { embed: { task: featureExtraction, model: minilm } }
routes:${route('plain', '')}${route('f32', '{ encoding: base64-f32 }')}${route('f16', '{ encoding: base64-f16, dimensions: 128 }')}${route('int8', '{ encoding: int8 }')}${route('binary', '{ encoding: binary }')}
`);
    const counters = worker.counters();
    for (const name of ['plain', 'f32', 'f16', 'int8', 'binary'])
      expect(counters[name], name).toMatchObject({ written: TEXTS, deadLettered: 0 });

    const read = (name: string) => readJsonl<Written>(dir.file(`${name}.jsonl`));
    const plain = await read('plain');
    const [f32, f16, int8, binary] = await Promise.all(['f32', 'f16', 'int8', 'binary'].map(read));
    plain.forEach((record, i) => {
      const vector = record.embedding as number[];
      expect(vector).toHaveLength(384);
      expect(norm(vector)).toBeCloseTo(1, 5);
      // The rest of the record is the input's, whatever the encoding.
      for (const other of [f32, f16, int8, binary]) {
        expect(other?.[i]?.id).toBe(record.id);
        expect(other?.[i]?.text).toBe(record.text);
      }
      const f32Bytes = Buffer.from(f32?.[i]?.embedding as string, 'base64');
      expect(Array.from({ length: 384 }, (_, j) => f32Bytes.readFloatLE(j * 4))).toEqual(vector);

      const head = vector.slice(0, 128);
      const half = float16s(f16?.[i]?.embedding as string);
      expect(half).toHaveLength(128);
      expect(norm(half)).toBeCloseTo(1, 3);
      expect(cosine(half, head)).toBeGreaterThan(0.99999);

      const { int8: q, scale } = int8?.[i]?.embedding as { int8: number[]; scale: number };
      q.forEach((x, j) =>
        expect(Math.abs(x * scale - (vector[j] as number))).toBeLessThanOrEqual(scale / 2 + 1e-7),
      );

      const bits = Buffer.from(binary?.[i]?.embedding as string, 'base64');
      expect(bits).toHaveLength(48);
      vector.forEach((x, j) =>
        expect(((bits[j >> 3] as number) >> (7 - (j & 7))) & 1).toBe(x > 0 ? 1 : 0),
      );
    });
  });
});
