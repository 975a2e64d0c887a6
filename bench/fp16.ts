// npm run bench:fp16 — MiniLM's float16 copy (model_fp16.onnx, `npm run models:ensure`) against
// its float32 model.onnx and against sentence-transformers' embeddings (torch, the committed
// references of test/fixtures/real-weights), on the 300 reference corpus texts, for each binding
// and each place pooling runs (host: JS decodes the halves; device: the pooling graph casts
// them). It measures what the fp16 parity test (test/parity/fp16-parity.test.ts) bounds:
// the worst cosine and the largest component difference, printed beside FP16_TOLERANCE.
// records/s are CPU figures and say nothing of a GPU (ONNX Runtime's CPU float16 kernels are few
// and unvectorized); the device bench times fp16 on CUDA. BENCH_FP16_BATCH (16).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FeatureExtractionPipeline } from '../src/pipelines/text/feature-extraction.ts';
import { ModelStore, type ModelSpec } from '../src/pipelines/runtime/model-store.ts';
import { FP16_TOLERANCE } from '../src/runtime/half-float.ts';
import type { Binding } from '../src/runtime/runtime-options.ts';
import { readMiniLmReferences } from '../test/parity/real-weight-references.ts';
import { CORPUS_FILE } from './lib/corpus.ts';
import { writeResultLine } from './lib/run-record.ts';
import { round } from './lib/stats.ts';

const FOLDER = join('.cache', 'models', 'all-MiniLM-L6-v2');
const BATCH = Number(process.env['BENCH_FP16_BATCH'] ?? 16);

const { corpusIds, embeddings: references } = readMiniLmReferences();
const byId = new Map<string, string>();
for (const line of readFileSync(CORPUS_FILE, 'utf8').split('\n')) {
  if (line === '') continue;
  const record = JSON.parse(line) as { id: string; text: string };
  byId.set(record.id, record.text);
}
const texts = corpusIds.map((id) => {
  const text = byId.get(id);
  if (text === undefined) throw new Error(`${id} is not in ${CORPUS_FILE}`);
  return text;
});

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let [dot, na, nb] = [0, 0, 0];
  for (let i = 0; i < a.length; i += 1) {
    dot += (a[i] ?? 0) * (b[i] ?? 0);
    na += (a[i] ?? 0) ** 2;
    nb += (b[i] ?? 0) ** 2;
  }
  return dot / Math.sqrt(na * nb);
}

function agreement(
  got: readonly Float32Array[],
  want: readonly ArrayLike<number>[],
): { worst_cosine: number; max_abs: number } {
  let [worst, maxAbs] = [1, 0];
  got.forEach((row, i) => {
    const other = want[i] ?? [];
    worst = Math.min(worst, cosine(row, other));
    row.forEach((v, h) => (maxAbs = Math.max(maxAbs, Math.abs(v - (other[h] ?? NaN)))));
  });
  return { worst_cosine: round(worst, 8), max_abs: Number(maxAbs.toPrecision(3)) };
}

const store = new ModelStore();
async function embed(spec: ModelSpec): Promise<{ vectors: Float32Array[]; rps: number }> {
  const pipeline = new FeatureExtractionPipeline(await store.load(spec));
  await pipeline.run(texts.slice(0, BATCH));
  const vectors: Float32Array[] = [];
  const started = performance.now();
  for (let start = 0; start < texts.length; start += BATCH)
    vectors.push(...((await pipeline.run(texts.slice(start, start + BATCH))) as Float32Array[]));
  return { vectors, rps: texts.length / ((performance.now() - started) / 1000) };
}

const results: Record<string, Record<string, unknown>> = {};
let withinTolerance = true;
for (const binding of ['native', 'onnxruntime-node'] as Binding[])
  for (const poolingOn of ['host', 'device'] as const) {
    const runtime = { binding, poolingOn };
    const full = await embed({ path: FOLDER, onnxFile: 'model.onnx', runtime });
    const half = await embed({ path: FOLDER, variant: 'fp16', runtime });
    const vsTorch = agreement(half.vectors, references);
    const vsFp32 = agreement(half.vectors, full.vectors);
    const within =
      vsTorch.worst_cosine >= FP16_TOLERANCE.cosine && vsTorch.max_abs <= FP16_TOLERANCE.maxAbs;
    withinTolerance &&= within;
    results[`${binding} pooling=${poolingOn}`] = {
      fp16_vs_torch: vsTorch,
      fp32_vs_torch: agreement(full.vectors, references),
      fp16_vs_fp32: vsFp32,
      within_tolerance: within,
      cpu_rps: { fp32: round(full.rps, 1), fp16: round(half.rps, 1) },
    };
    process.stderr.write(
      `${binding} ${poolingOn}: ${JSON.stringify(results[`${binding} pooling=${poolingOn}`])}\n`,
    );
  }
await store.close();

writeResultLine({
  bench: 'fp16',
  model: 'all-MiniLM-L6-v2 model_fp16.onnx (kit/half_precision.py) vs model.onnx',
  texts: texts.length,
  tolerance: FP16_TOLERANCE,
  within_tolerance: withinTolerance,
  results,
});
