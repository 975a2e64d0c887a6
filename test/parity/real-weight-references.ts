// The committed references of the real-weight parity tests (test/fixtures/real-weights/): made
// with torch by scripts/models/export_references.py from a `models:fetch` build, read here against
// the models `npm run models:ensure` builds without torch into .cache/models (docs/models.md).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChatMessage } from '../../src/pipelines/generation/text-generation.ts';

export const REAL_WEIGHTS = join(import.meta.dirname, '..', 'fixtures', 'real-weights');

interface Float32Base64 {
  dtype: 'float32';
  byte_order: 'little';
  shape: [number, number];
  base64: string;
}

interface MiniLmReferencesFile {
  corpus: { file: string; ids: string[] };
  call: { options: Record<string, unknown> };
  embeddings: Float32Base64;
}

export interface MiniLmReferences {
  corpusIds: string[];
  options: Record<string, unknown>;
  /** sentence-transformers' encode(normalize_embeddings=True), one row per corpus id. */
  embeddings: Float32Array[];
}

/** Rows of a float32 matrix stored as little-endian bytes in base64. */
export function decodeFloat32Rows(stored: Float32Base64): Float32Array[] {
  if (stored.dtype !== 'float32' || stored.byte_order !== 'little')
    throw new Error(`expected little-endian float32, got ${stored.dtype} ${stored.byte_order}`);
  const [rows, columns] = stored.shape;
  const bytes = Buffer.from(stored.base64, 'base64');
  if (bytes.length !== rows * columns * 4)
    throw new Error(`${bytes.length} bytes do not hold a ${rows} x ${columns} float32 matrix`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  return Array.from({ length: rows }, (_, r) =>
    Float32Array.from({ length: columns }, (_, c) => view.getFloat32((r * columns + c) * 4, true)),
  );
}

/** The corpus texts of `ids`, in order; '' for an id the corpus file lacks (callers check). */
export function corpusTextsOf(ids: readonly string[], corpusFile: string): string[] {
  const byId = new Map<string, string>();
  for (const line of readFileSync(corpusFile, 'utf8').split('\n')) {
    if (line === '') continue;
    const record = JSON.parse(line) as { id: string; text: string };
    byId.set(record.id, record.text);
  }
  return ids.map((id) => byId.get(id) ?? '');
}

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let [dot, na, nb] = [0, 0, 0];
  for (let i = 0; i < a.length; i += 1) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

/** Row by row: the worst cosine and the largest component difference between two embeddings sets. */
export function agreement(
  got: readonly ArrayLike<number>[],
  want: readonly ArrayLike<number>[],
): { cosine: number; maxAbs: number } {
  let [worst, maxAbs] = [1, 0];
  got.forEach((row, i) => {
    const other = want[i] ?? [];
    worst = Math.min(worst, cosine(row, other));
    for (let h = 0; h < row.length; h += 1)
      maxAbs = Math.max(maxAbs, Math.abs((row[h] ?? NaN) - (other[h] ?? NaN)));
  });
  return { cosine: worst, maxAbs };
}

export function readMiniLmReferences(): MiniLmReferences {
  const file = JSON.parse(
    readFileSync(join(REAL_WEIGHTS, 'all-MiniLM-L6-v2', 'references.json'), 'utf8'),
  ) as MiniLmReferencesFile;
  return {
    corpusIds: file.corpus.ids,
    options: file.call.options,
    embeddings: decodeFloat32Rows(file.embeddings),
  };
}

export interface SmolGolden {
  name: string;
  call: { prompt: string | ChatMessage[]; options: { max_new_tokens: number } };
  prompt_ids: number[];
  new_ids: number[];
  text: string;
  stopped_by_eos: boolean;
}

/** transformers' greedy text-generation output on SmolLM2's dequantized float32 weights. */
export function readSmolGoldens(): SmolGolden[] {
  return (
    JSON.parse(
      readFileSync(join(REAL_WEIGHTS, 'smollm2-135m-instruct', 'goldens.json'), 'utf8'),
    ) as { generation: SmolGolden[] }
  ).generation;
}
