// npm run bench:decode-step — one decode step of the generative engine on each export of a model
// folder, side by side: model.onnx (whose presents are the whole cache, copied every step) and
// model_appending.onnx (the step's keys and values only, written into the cache's buffers), on
// one intra-op thread as an engine thread runs it. For each batch size and past length it times
// runStep (the run and our host work: feeds, the append, logits) from the same cache state, so
// every repetition does the same work; the cache values are random (speed does not depend on
// them). From the times it derives each export's decode run cost in cached token-rows: what one
// more run costs (batch 1, the short past) over what one more cached column costs a row (the
// widest batch from the short past to the long one), the figure decodeRunCostTokens stands for.
// model.onnx runs a third time with its cache resident (runtime.kvOn: device), as a GPU engine
// keeps it: on CPU that spares the copy of every present into JS and back.
// BENCH_MODEL (default smollm2), BENCH_STEP_BATCHES (1,16,32), BENCH_STEP_PASTS (32,288),
// BENCH_STEP_REPS (6); the final line has ms per step and the ratios.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  APPEND_COLUMNS,
  kvLayoutOf,
  releaseResident,
  runStep,
  type KvLayout,
  type KvState,
} from '../src/pipelines/generation/kv-cache.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { Tensor } from '../src/runtime/tensor.ts';
import { modelFolder } from './lib/generate-workloads.ts';
import { writeResultLine } from './lib/run-record.ts';

const list = (name: string, fallback: string): number[] =>
  (process.env[name] ?? fallback).split(',').map(Number);
const MODEL = modelFolder(process.env['BENCH_MODEL'] ?? 'smollm2');
const BATCHES = list('BENCH_STEP_BATCHES', '1,16,32');
const PASTS = list('BENCH_STEP_PASTS', '32,288');
const REPS = Number(process.env['BENCH_STEP_REPS'] ?? 6);
const EXPORTS = ['model.onnx', 'model_appending.onnx'].filter((f) => existsSync(join(MODEL, f)));
/**
 * Each export's runs, and model.onnx once more with its cache resident (runtime.kvOn: device):
 * every step's presents stay in ONNX Runtime's memory and feed the next step as they are, where
 * the host path copies them into JS and hands them back.
 */
const VARIANTS: { label: string; file: string; resident: boolean }[] = [
  ...EXPORTS.map((file) => ({ label: file, file, resident: false })),
  ...(EXPORTS.includes('model.onnx')
    ? [{ label: 'model.onnx kvOn=device', file: 'model.onnx', resident: true }]
    : []),
];

/** A left-padded batch state with `past` real columns per row (plus spare ones if appending). */
function cacheState(layout: KvLayout, batch: number, past: number, seed: number): KvState {
  const capacity = past + (layout.appending ? APPEND_COLUMNS : 0);
  let x = seed;
  const random = (): number => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648 - 0.5;
  };
  const size = batch * layout.kvHeads * capacity * layout.headDim;
  const cache = layout.pastNames.map(() => {
    const data = new Float32Array(size);
    for (let i = 0; i < size; i += 1) data[i] = random();
    return new Tensor('float32', data, [batch, layout.kvHeads, capacity, layout.headDim]);
  });
  return {
    batch,
    past: cache,
    pastLength: past,
    attentionMask: Array.from({ length: batch }, () => Array.from({ length: past }, () => 1)),
    realTokens: Array.from({ length: batch }, () => past),
  };
}

const store = new ModelStore();
const ms: Record<string, Record<string, number>> = {};
for (const { label, file, resident } of VARIANTS) {
  const model = await store.load({ path: MODEL, onnxFile: file, runtime: { intraOpThreads: 1 } });
  const layout = kvLayoutOf(model);
  const times: Record<string, number> = {};
  for (const batch of BATCHES)
    for (const past of PASTS) {
      const tokens = { ids: Array.from({ length: batch }, (_, r) => [100 + r]) };
      // The timed steps start from a step's own result: a resident cache for the resident runs.
      const host = cacheState(layout, batch, past, batch * 1000 + past);
      const { state } = await runStep(model.session, layout, host, tokens, { resident });
      const started = performance.now();
      for (let i = 0; i < REPS; i += 1) {
        const next = await runStep(model.session, layout, state, tokens, { resident });
        releaseResident([next.state], [state]);
      }
      const stepMs = (performance.now() - started) / REPS;
      releaseResident([state]);
      times[`b${batch}_p${past}`] = Math.round(stepMs * 10) / 10;
      process.stderr.write(`${label} batch ${batch} past ${past}: ${stepMs.toFixed(1)} ms\n`);
    }
  ms[label] = times;
}
await store.close();

const [short = 0, long = 0] = [Math.min(...PASTS), Math.max(...PASTS)];
const widest = Math.max(...BATCHES);
const runCost = (t: Record<string, number>): number => {
  const perTokenRow =
    ((t[`b${widest}_p${long}`] ?? NaN) - (t[`b${widest}_p${short}`] ?? NaN)) /
    (widest * (long - short));
  return Math.round((t[`b1_p${short}`] ?? NaN) / perTokenRow);
};
const base = ms['model.onnx'];
const appending = ms['model_appending.onnx'];
const ratios = (over: Record<string, number> | undefined): Record<string, number> => {
  const out: Record<string, number> = {};
  if (base !== undefined && over !== undefined)
    for (const key of Object.keys(base))
      out[key] = Math.round(((base[key] ?? NaN) / (over[key] ?? NaN)) * 100) / 100;
  return out;
};
const speedup = ratios(appending);
writeResultLine({
  bench: 'decode-step',
  model: MODEL,
  intra_op_threads: 1,
  reps: REPS,
  step_ms: ms,
  appending_speedup: speedup,
  resident_speedup: ratios(ms['model.onnx kvOn=device']),
  run_cost_tokens: Object.fromEntries(Object.entries(ms).map(([f, t]) => [f, runCost(t)])),
});
