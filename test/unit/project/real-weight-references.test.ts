// The committed real-weight references (test/fixtures/real-weights) and their reader: what the
// torch-free CI path compares against must decode to what export_references.py wrote.
import { describe, expect, it } from 'vitest';
import {
  decodeFloat32Rows,
  readMiniLmReferences,
  readSmolGoldens,
} from '../../parity/real-weight-references.ts';

function stored(values: Float32Array, shape: [number, number]) {
  return {
    dtype: 'float32' as const,
    byte_order: 'little' as const,
    shape,
    base64: Buffer.from(values.buffer, values.byteOffset, values.byteLength).toString('base64'),
  };
}

describe('decodeFloat32Rows', () => {
  it('gives back the rows of a little-endian float32 matrix', () => {
    const values = Float32Array.from({ length: 12 }, (_, i) => Math.fround((i - 5) / 3));
    const rows = decodeFloat32Rows(stored(values, [3, 4]));
    expect(rows).toHaveLength(3);
    expect(rows.flatMap((r) => Array.from(r))).toEqual(Array.from(values));
  });

  it('refuses bytes that do not fill the stated shape', () => {
    const values = new Float32Array(5);
    expect(() => decodeFloat32Rows(stored(values, [2, 3]))).toThrow(/do not hold a 2 x 3/);
  });
});

describe('committed references', () => {
  it('MiniLM: one unit-length sentence-transformers embedding per corpus id', () => {
    const { corpusIds, options, embeddings } = readMiniLmReferences();
    expect(new Set(corpusIds).size).toBe(corpusIds.length);
    expect(embeddings).toHaveLength(corpusIds.length);
    expect(options['normalize']).toBe(true);
    for (const row of embeddings) {
      expect(row).toHaveLength(384);
      const norm = Math.sqrt(row.reduce((sum, x) => sum + x * x, 0));
      expect(Math.abs(norm - 1)).toBeLessThan(1e-5);
    }
  });

  it('SmolLM2: every golden has prompt ids and new ids within its token budget', () => {
    const goldens = readSmolGoldens();
    expect(goldens.length).toBeGreaterThan(0);
    for (const golden of goldens) {
      expect(golden.prompt_ids.length, golden.name).toBeGreaterThan(0);
      expect(golden.new_ids.length, golden.name).toBeGreaterThan(0);
      expect(golden.new_ids.length, golden.name).toBeLessThanOrEqual(
        golden.call.options.max_new_tokens,
      );
    }
  });
});
