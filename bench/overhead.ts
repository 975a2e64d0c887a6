// npm run bench:overhead — what a batch of one costs us beyond ONNX Runtime's session.run
// (issue 15). Both contenders run one record per session call on the same cores (one thread per
// core, one intra-op thread each), on the same spam-assassin texts:
//   raw    a bare session per thread fed pre-tokenized ids (bench/lib/raw-pool.ts)
//   ours   the batch engine with maxBatchSize 1: pricing, queue, dispatch, the worker's
//          tokenization, feeds, pooling and the result's trip back
// Short texts (their first words) make the fixed cost visible; full texts (cut at 256 tokens) show
// what it weighs on real records. From the engine's per-batch compute time (measured inside the
// inference thread) the gap splits into the thread's own work beyond session.run and the trip
// between threads. Options: --texts N (default 1500), --long-texts N (300), --rounds N (3, the
// best of each is kept; raw and ours alternate), --models fp32,int8. Ends with one JSON line.
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BatchEngine } from '../src/engine/batch-engine.ts';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import { loadTexts } from './lib/corpus.ts';
import { allAtOnce } from './lib/engine-runs.ts';
import { RawPool, sortedBatches } from './lib/raw-pool.ts';
import { round } from './lib/stats.ts';
import { addCpuSince, cpuByThreadKind, cpuPerRecord } from './lib/thread-cpu.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  options: {
    texts: { type: 'string', default: '1500' },
    'long-texts': { type: 'string', default: '300' },
    rounds: { type: 'string', default: '3' },
    models: { type: 'string', default: 'fp32,int8' },
  },
});
const MODELS: Record<string, { folder: string; onnx: string }> = {
  fp32: { folder: '.cache/models/all-MiniLM-L6-v2', onnx: 'model.onnx' },
  int8: { folder: 'models/all-MiniLM-L6-v2-int8', onnx: 'model.onnx' },
};
const MAX_LENGTH = 256;
const cores = availableParallelism();
const started = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
};

const corpus = loadTexts(Number(values.texts));
const sets = {
  short: corpus.map((text) => text.split(/\s+/).filter(Boolean).slice(0, 6).join(' ')),
  long: corpus.slice(0, Number(values['long-texts'])),
};
const rounds = Number(values.rounds);

interface SetFigures {
  tokens_per_record: number;
  raw_records_per_s: number;
  ours_records_per_s: number;
  ratio: number;
  /** Core-milliseconds per record we spend beyond raw's. */
  overhead_ms: number;
  /** Of which: inside the inference thread (tokenize, feeds, pooling) ... */
  in_thread_ms: number;
  /** ... and the rest: main-thread pricing, queue, dispatch, messages both ways. */
  outside_ms: number;
  /** CPU per record by thread kind (bench/lib/thread-cpu.ts), over every round of each. */
  cpu_ms_per_record: { raw: Record<string, number>; ours: Record<string, number> };
}

async function measure(
  engine: BatchEngine,
  pool: RawPool,
  rows: number[][],
  texts: string[],
): Promise<SetFigures> {
  const batches = sortedBatches(rows, 1);
  let rawRate = 0;
  let oursRate = 0;
  let computeMs = Infinity;
  const cpu = { raw: new Map<string, number>(), ours: new Map<string, number>() };
  // Turns alternate, so that a slow spell of the machine falls on both contenders.
  for (let i = 0; i < rounds; i += 1) {
    let before = cpuByThreadKind();
    const t0 = performance.now();
    await pool.run(batches);
    rawRate = Math.max(rawRate, rows.length / ((performance.now() - t0) / 1000));
    addCpuSince(cpu.raw, before);
    before = cpuByThreadKind();
    const run = await allAtOnce(engine, texts);
    addCpuSince(cpu.ours, before);
    computeMs = Math.min(computeMs, run.stats.computeMs / run.stats.items);
    oursRate = Math.max(oursRate, run.recordsPerSecond);
  }
  const rawMs = (cores * 1000) / rawRate;
  const oursMs = (cores * 1000) / oursRate;
  return {
    tokens_per_record: round(rows.reduce((n, r) => n + r.length, 0) / rows.length, 1),
    raw_records_per_s: round(rawRate, 1),
    ours_records_per_s: round(oursRate, 1),
    ratio: round(oursRate / rawRate),
    overhead_ms: round(oursMs - rawMs),
    in_thread_ms: round(computeMs - rawMs),
    outside_ms: round(oursMs - computeMs),
    cpu_ms_per_record: {
      raw: cpuPerRecord(cpu.raw, rows.length * rounds),
      ours: cpuPerRecord(cpu.ours, rows.length * rounds),
    },
  };
}

const report: Record<string, Record<string, SetFigures>> = {};
for (const name of values.models.split(',')) {
  const model = MODELS[name];
  if (model === undefined) throw new Error(`--models: unknown '${name}' (fp32, int8)`);
  const tokenizer = await TextTokenizer.load(model.folder);
  const engine = await BatchEngine.start({
    models: {
      model: { path: model.folder, onnxFile: model.onnx, runtime: { intraOpThreads: 1 } },
    },
    pipelines: {
      bench: {
        task: 'featureExtraction',
        model: 'model',
        options: { pooling: 'mean', normalize: true, maxLength: MAX_LENGTH },
      },
    },
    batching: { maxBatchSize: 1 },
    shards: [{ device: 'cpu', threads: cores }],
  });
  const pool = await RawPool.start(`${model.folder}/${model.onnx}`, {
    workers: cores,
    intraOpThreads: 1,
  });
  report[name] = {};
  for (const [set, texts] of Object.entries(sets)) {
    const rows = (await tokenizer.encode(texts, { maxLength: MAX_LENGTH })).map((e) => e.ids);
    await allAtOnce(engine, texts.slice(0, 50)); // warm both before timing
    await pool.run(sortedBatches(rows.slice(0, 50), 1));
    const figures = await measure(engine, pool, rows, texts);
    report[name][set] = figures;
    log(`${name} ${set}: ${JSON.stringify(figures)}`);
  }
  await Promise.all([engine.close(), pool.close()]);
}
writeResultLine({
  bench: 'overhead',
  cores,
  rounds,
  seconds: round((performance.now() - started) / 1000, 0),
  ...report,
});
