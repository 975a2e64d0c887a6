// Measures the KV layout choices of the generative engine on the ~100M model (docs/generative.md):
// A: the decode batch keeps the model's presents as its next past (copies only on join/leave);
// B: per-sequence caches, concatenated into the batch before each step and split back after;
// C: a prefill chunk run as its own session.run beside the decode run, vs padded into it.
import { performance } from 'node:perf_hooks';
import { assembleRows } from '../src/generative/kv-batch.ts';
import { emptyKvState, runStep, type KvState } from '../src/pipelines/generation/kv-cache.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { TextGenerationPipeline } from '../src/pipelines/generation/text-generation.ts';
import { writeResultLine } from './lib/run-record.ts';

const MODEL = process.env['BENCH_MODEL'] ?? '.cache/models/llama-100m';
const BATCH = Number(process.env['KV_BATCH'] ?? 16);
const PROMPT = Number(process.env['KV_PROMPT'] ?? 128);
const STEPS = Number(process.env['KV_STEPS'] ?? 8);
const CHUNK = 64;

const store = new ModelStore();
const model = await store.load({ path: MODEL, runtime: { intraOpThreads: 2 } });
const { layout } = new TextGenerationPipeline(model);
const tokens = (n: number, salt: number): number[] =>
  Array.from({ length: n }, (_, i) => 3 + ((i * 7919 + salt * 104729) % 15000));

// Ragged prompts, prefilled one by one as the engine does.
const rows: KvState[] = [];
for (let r = 0; r < BATCH; r += 1) {
  const len = Math.round(PROMPT * (0.5 + r / BATCH));
  rows.push(
    (await runStep(model.session, layout, emptyKvState(layout, 1), { ids: [tokens(len, r)] }))
      .state,
  );
}
const next = { ids: rows.map((_, r) => [10 + r]) };
const time = async (label: string, body: () => Promise<void>): Promise<number> => {
  await body();
  const t0 = performance.now();
  for (let i = 0; i < STEPS; i += 1) await body();
  const ms = (performance.now() - t0) / STEPS;
  console.log(`${label}: ${ms.toFixed(1)} ms/step`);
  return ms;
};

let batch = assembleRows(
  layout,
  rows.map((state) => ({ state, row: 0 })),
);
const assembleMs = await time('assemble only (one join/leave)', () => {
  assembleRows(
    layout,
    rows.map((state) => ({ state, row: 0 })),
  );
  return Promise.resolve();
});
const kept = await time('A: kept batch (presents -> past)', async () => {
  batch = (await runStep(model.session, layout, batch, next)).state;
});
let perSeq = rows;
const concat = await time('B: per-sequence caches, concat + split per step', async () => {
  const joined = assembleRows(
    layout,
    perSeq.map((state) => ({ state, row: 0 })),
  );
  const out = (await runStep(model.session, layout, joined, next)).state;
  perSeq = perSeq.map((_, r) => assembleRows(layout, [{ state: out, row: r }]));
});
const chunkState = emptyKvState(layout, 1);
const separate = await time(`C1: decode run + separate ${CHUNK}-token prefill run`, async () => {
  await runStep(model.session, layout, batch, next);
  await runStep(model.session, layout, chunkState, { ids: [tokens(CHUNK, 99)] });
});
const padded = assembleRows(layout, [
  ...rows.map((state) => ({ state, row: 0 })),
  { state: rows[0] as KvState, row: 0 },
]);
const merged = await time(
  `C2: one run, decodes left-padded to the ${CHUNK}-token chunk`,
  async () => {
    const ids = [
      ...next.ids.map((r) => [...Array.from({ length: CHUNK - 1 }, () => 2), ...r]),
      tokens(CHUNK, 99),
    ];
    const mask = ids.map((r, i) => r.map((_, c) => (i < BATCH && c < CHUNK - 1 ? 0 : 1)));
    await runStep(model.session, layout, padded, { ids, mask });
  },
);
writeResultLine({
  bench: 'kv-layout',
  batch: BATCH,
  pastTokens: batch.pastLength,
  ms: {
    assemble: assembleMs,
    kept,
    concatSplit: concat,
    separatePrefill: separate,
    mergedPrefill: merged,
  },
});
await store.close();
