// npm run bench:fp16 — MiniLM's float16 copy (model_fp16.onnx, `npm run models:ensure`) against
// its float32 model.onnx and against sentence-transformers' embeddings (torch, the committed
// references of test/fixtures/real-weights), on the 300 reference corpus texts, for each binding
// and each place pooling runs (host: JS decodes the halves; device: the pooling graph casts
// them). It measures what the fp16 parity test (test/parity/fp16-parity.test.ts) bounds:
// the worst cosine and the largest component difference, printed beside FP16_TOLERANCE.
// records/s are CPU figures and say nothing of a GPU (ONNX Runtime's CPU float16 kernels are few
// and unvectorized); the device bench times fp16 on CUDA. BENCH_FP16_BATCH (16).
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FeatureExtractionPipeline } from '../src/pipelines/text/feature-extraction.ts';
import { ModelStore, type ModelSpec } from '../src/pipelines/runtime/model-store.ts';
import { FP16_TOLERANCE } from '../src/runtime/half-float.ts';
import type { Binding } from '../src/runtime/runtime-options.ts';
import {
  agreement,
  corpusTextsOf,
  readMiniLmReferences,
} from '../test/parity/real-weight-references.ts';
import { CORPUS_FILE } from './lib/corpus.ts';
import { writeResultLine } from './lib/run-record.ts';
import { round } from './lib/stats.ts';

const FOLDER = join('.cache', 'models', 'all-MiniLM-L6-v2');
const BATCH = Number(process.env['BENCH_FP16_BATCH'] ?? 16);

const { corpusIds, embeddings: references } = readMiniLmReferences();
const texts = corpusTextsOf(corpusIds, CORPUS_FILE);
const absent = corpusIds.filter((_, i) => texts[i] === '');
if (absent.length > 0) throw new Error(`${absent.join(', ')} not in ${CORPUS_FILE}`);

/** agreement() rounded for the JSON line. */
function measured(
  got: readonly Float32Array[],
  want: readonly ArrayLike<number>[],
): { worst_cosine: number; max_abs: number } {
  const { cosine, maxAbs } = agreement(got, want);
  return { worst_cosine: round(cosine, 8), max_abs: Number(maxAbs.toPrecision(3)) };
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
    const vsTorch = measured(half.vectors, references);
    const vsFp32 = measured(half.vectors, full.vectors);
    const within =
      vsTorch.worst_cosine >= FP16_TOLERANCE.cosine && vsTorch.max_abs <= FP16_TOLERANCE.maxAbs;
    withinTolerance &&= within;
    results[`${binding} pooling=${poolingOn}`] = {
      fp16_vs_torch: vsTorch,
      fp32_vs_torch: measured(full.vectors, references),
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
