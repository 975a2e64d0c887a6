// npm run bench:pooling — featureExtraction with pooling on the encoder's device (a linked run
// into the pooling graph, runtime.poolingOn: device) against pooling in JS (host), side by side on
// the same batches of corpus texts, on one intra-op thread as a shard thread runs it. On CPU both
// read the same memory, so the ratio is the cost (or gain) of the graph's kernels over the JS loop;
// the bytes per batch that would cross from a GPU to the host ([batch, tokens, hidden] against
// [batch, hidden] floats) are counted from the batches' shapes. BENCH_MODEL (default MiniLM fp32),
// BENCH_POOLING_TEXTS (128), BENCH_POOLING_BATCH (32), BENCH_POOLING_PASSES (3: the best counts).
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { FeatureExtractionPipeline } from '../src/pipelines/text/feature-extraction.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { loadTexts } from './lib/corpus.ts';
import { writeResultLine } from './lib/run-record.ts';
import { maxAbsDiff, round } from './lib/stats.ts';

const MODEL = process.env['BENCH_MODEL'] ?? join('.cache', 'models', 'all-MiniLM-L6-v2');
const TEXTS = Number(process.env['BENCH_POOLING_TEXTS'] ?? 128);
const BATCH = Number(process.env['BENCH_POOLING_BATCH'] ?? 32);
const PASSES = Number(process.env['BENCH_POOLING_PASSES'] ?? 3);

const texts = loadTexts(TEXTS);
const batches: string[][] = [];
for (let i = 0; i < texts.length; i += BATCH) batches.push(texts.slice(i, i + BATCH));

const store = new ModelStore();
const modes = ['host', 'device'] as const;
const pipelines = await Promise.all(
  modes.map(
    async (poolingOn) =>
      new FeatureExtractionPipeline(
        await store.load({ path: MODEL, onnxFile: 'model.onnx', runtime: { poolingOn } }),
      ),
  ),
);
const best = { host: Infinity, device: Infinity };
const outputs: Record<(typeof modes)[number], Float32Array[]> = { host: [], device: [] };
for (let pass = 0; pass <= PASSES; pass += 1) {
  // Interleaved so that the machine's noise falls on both; pass 0 warms up.
  for (const [i, mode] of modes.entries()) {
    const pipeline = pipelines[i] as FeatureExtractionPipeline;
    const started = performance.now();
    const out: Float32Array[] = [];
    for (const batch of batches) out.push(...((await pipeline.run(batch)) as Float32Array[]));
    const ms = performance.now() - started;
    if (pass > 0) best[mode] = Math.min(best[mode], ms);
    outputs[mode] = out;
  }
}

// What crosses to the host per batch: the encoder's hidden states, or the pooled vectors.
const tokenizer = pipelines[0]?.model.tokenizer;
let hiddenBytes = 0;
let pooledBytes = 0;
const hidden = outputs.device[0]?.length ?? 0;
for (const batch of batches) {
  const encoded =
    (await tokenizer?.encode(batch, { truncation: 'longest_first', maxLength: 256 })) ?? [];
  const width = Math.max(...encoded.map((e) => e.ids.length));
  hiddenBytes += batch.length * width * hidden * 4;
  pooledBytes += batch.length * hidden * 4;
}
await store.close();

const diffs = outputs.host.map((v, i) => maxAbsDiff(v, outputs.device[i] ?? new Float32Array()));
writeResultLine({
  bench: 'pooling',
  model: MODEL,
  texts: texts.length,
  batch: BATCH,
  passes: PASSES,
  records_per_second: {
    host: round((texts.length / best.host) * 1000, 1),
    device: round((texts.length / best.device) * 1000, 1),
  },
  device_vs_host: round(best.host / best.device, 3),
  bytes_to_host_per_batch: {
    host: Math.round(hiddenBytes / batches.length),
    device: Math.round(pooledBytes / batches.length),
  },
  bytes_ratio: round(hiddenBytes / pooledBytes, 1),
  max_abs_diff: Math.max(...diffs),
});
