// all-MiniLM-L6-v2 with real weights: the committed int8 model against Python onnxruntime on the
// same file (runs everywhere), and the fetched fp32 model against sentence-transformers (runs when
// `npm run models:fetch` has filled .cache/models; skipped, and reported as skipped, otherwise).
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FeatureExtractionPipeline } from '../../src/pipelines/feature-extraction.ts';
import { ModelStore } from '../../src/pipelines/model-store.ts';
import { compareDeep } from './compare.ts';
import type { Goldens } from './goldens.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const INT8 = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const FP32 = join(ROOT, '.cache', 'models', 'all-MiniLM-L6-v2');
const CORPUS = join(ROOT, '.cache', 'corpus', 'spam-assassin.jsonl');
const fetched = existsSync(join(FP32, 'goldens.json')) && existsSync(CORPUS);

function readGoldensAt(folder: string): Goldens {
  return JSON.parse(readFileSync(join(folder, 'goldens.json'), 'utf8')) as Goldens;
}

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i += 1) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

describe('featureExtraction', { meta: { pipeline: 'featureExtraction', parity: 'golden' } }, () => {
  describe('all-MiniLM-L6-v2 int8 (the default model, committed)', () => {
    const golden = readGoldensAt(INT8).pipeline[0];
    it(`${golden?.name ?? 'missing'} matches Python onnxruntime on the same file`, async ({
      task,
    }) => {
      if (golden === undefined)
        throw new Error('models/all-MiniLM-L6-v2-int8/goldens.json has no pipeline case');
      const store = new ModelStore();
      try {
        const pipeline = new FeatureExtractionPipeline(await store.load({ path: INT8 }), {
          normalize: true,
          maxLength: Number(golden.call.options['max_length'] ?? 256),
        });
        // Dynamic int8 quantization scales activations over the whole padded batch, so the
        // result depends on batch mates: run the same batches of 16 as the reference did
        // (scripts/models/kit/minilm.py, onnx_embeddings).
        const inputs = golden.call.inputs as string[];
        const result: unknown[] = [];
        for (let start = 0; start < inputs.length; start += 16)
          result.push(...(await pipeline.run(inputs.slice(start, start + 16))));
        const comparison = compareDeep(result, golden.output, 1e-4);
        task.meta.maxAbsDiff = comparison.maxAbsDiff;
        expect(comparison.differences).toEqual([]);
      } finally {
        await store.close();
      }
    });
  });

  describe('all-MiniLM-L6-v2 fp32 (fetched) against sentence-transformers', () => {
    it.skipIf(!fetched)(
      'cosine >= 0.9999 on every corpus text (needs npm run models:fetch)',
      async ({ task }) => {
        const golden = readGoldensAt(FP32).pipeline[0];
        if (golden === undefined) throw new Error('no reference embeddings in the fetched goldens');
        const { corpus_ids: ids } = golden.call.inputs as { corpus_ids: string[] };
        const byId = new Map<string, string>();
        for (const line of readFileSync(CORPUS, 'utf8').split('\n')) {
          if (line === '') continue;
          const record = JSON.parse(line) as { id: string; text: string };
          byId.set(record.id, record.text);
        }
        const texts = ids.map((id) => {
          const text = byId.get(id);
          if (text === undefined)
            throw new Error(`corpus record ${id} is missing; rerun npm run corpus:build`);
          return text;
        });
        const store = new ModelStore();
        try {
          const pipeline = new FeatureExtractionPipeline(
            await store.load({ path: FP32, onnxFile: 'model.onnx' }),
            {
              normalize: true,
              maxLength: Number(golden.call.options['max_length'] ?? 256),
            },
          );
          const expected = golden.output as number[][];
          let worst = 1;
          let maxAbsDiff = 0;
          for (let start = 0; start < texts.length; start += 32) {
            const vectors = (await pipeline.run(texts.slice(start, start + 32))) as Float32Array[];
            vectors.forEach((v, i) => {
              const reference = expected[start + i] ?? [];
              worst = Math.min(worst, cosine(v, reference));
              maxAbsDiff = Math.max(
                maxAbsDiff,
                ...Array.from(v, (x, j) => Math.abs(x - (reference[j] ?? NaN))),
              );
            });
          }
          task.meta.maxAbsDiff = maxAbsDiff;
          expect(worst).toBeGreaterThanOrEqual(0.9999);
        } finally {
          await store.close();
        }
      },
    );
  });
});
