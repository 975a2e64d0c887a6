// One task's side-by-side run: raw ONNX Runtime, our engine (sorted and FIFO batches) and
// transformers.js on the same texts, the same model file and the same number of cores.
import { performance } from 'node:perf_hooks';
import { TextTokenizer } from '../../src/pipelines/text-tokenizer.ts';
import type { TaskSpec, TjsRunner } from './contenders.ts';
import { allAtOnce, atFixedLoad, startEngine, type LatencyRun } from './engine-runs.ts';
import { RawPool, sortedBatches, type RawConfig } from './raw-pool.ts';
import { maxAbsDiff, percentile } from './stats.ts';

export interface TaskInput {
  texts: string[];
  /** Other texts, for warm-ups and latency, so that no contender sees its timed texts twice. */
  spare: string[];
  latencyRecords: number;
  cores: number;
  calibration: number;
  /** transformers.js batch size to use without trying both (saves minutes on slow models). */
  transformersJsBatch?: number;
  log: (line: string) => void;
}

export interface TaskReport {
  task: string;
  texts: number;
  rps: { raw: number; ours: number; transformers_js: number; fifo: number };
  raw: RawConfig;
  transformersJsBatch: number;
  transformersJsTrials: Record<string, number>;
  rawTrials: Record<string, number>;
  paddingEfficiency: { ours: number; fifo: number };
  oursBatches: { count: number; meanSize: number; meanComputeMs: number; p99ComputeMs: number };
  /**
   * boundMs: maxWaitMs + 2 x one batch's compute, the batch taken at the same percentile as the
   * latency (p99 of the throughput run's batches): a record waits for its batch to be cut, for
   * one batch ahead of it, then for its own. boundMeanMs: the same with the mean batch, which a
   * queue whose batches are single records of varied lengths cannot promise at p99.
   */
  latency: LatencyRun & { boundMs: number; boundMeanMs: number };
  maxAbsDiff: number;
  /** Over inputs longer than maxLength, where transformers.js drops the final [SEP]. */
  maxAbsDiffTruncated: number;
  overLength: number;
  labelMismatches: number;
  tokenization: {
    mainMsPerRecord: number;
    workerMsPerRecord: number;
    inferenceCoreMsPerRecord: number;
  };
  maxWaitMs: number;
}

const MAX_WAIT_MS = 10;

export async function benchTask(spec: TaskSpec, input: TaskInput): Promise<TaskReport> {
  const { texts, spare, cores, log } = input;
  const tokenizer = await TextTokenizer.load(spec.modelFolder);

  // Tokenization as the engine does it: one text at a time, untruncated, on the main thread to
  // size the batch; then in batches, truncated, on the inference thread.
  let started = performance.now();
  const untruncated: number[] = [];
  for (const text of texts)
    untruncated.push((await tokenizer.encode([text], { truncation: false }))[0]?.ids.length ?? 0);
  const mainMsPerRecord = (performance.now() - started) / texts.length;
  started = performance.now();
  const rows: number[][] = [];
  for (let i = 0; i < texts.length; i += 32) {
    const encoded = await tokenizer.encode(texts.slice(i, i + 32), {
      truncation: 'longest_first',
      maxLength: spec.maxLength,
    });
    rows.push(...encoded.map((e) => e.ids));
  }
  const workerMsPerRecord = (performance.now() - started) / texts.length;
  log(
    `${spec.name}: tokenize ${mainMsPerRecord.toFixed(3)} ms/record (main), ${workerMsPerRecord.toFixed(3)} (batched)`,
  );

  // Raw: pick the thread split at batch 32, then the batch size, on an evenly spaced sample of
  // the sorted rows; the timed run uses the winner on every row. The sample gives every worker
  // of every split at least two batches, or a split with more workers would look slower only
  // because some of them had nothing to do.
  const onnxPath = `${spec.modelFolder}/model.onnx`;
  const bySize = [...rows].sort((a, b) => a.length - b.length);
  const calibration = Math.min(bySize.length, Math.max(input.calibration, 2 * cores * 32));
  const sample = bySize.filter(
    (_, i) => i % Math.max(1, Math.floor(bySize.length / calibration)) === 0,
  );
  const rawTrials: Record<string, number> = {};
  const tryRaw = async (config: RawConfig, batchRows: number[][]): Promise<number> => {
    const pool = await RawPool.start(onnxPath, config.workers, config.intraOpThreads);
    try {
      const batches = sortedBatches(batchRows, config.batchSize);
      await pool.run(batches.slice(-config.workers));
      const t0 = performance.now();
      await pool.run(batches);
      return batchRows.length / ((performance.now() - t0) / 1000);
    } finally {
      await pool.close();
    }
  };
  const splits = [
    { workers: cores, intraOpThreads: 1 },
    { workers: 1, intraOpThreads: cores },
  ];
  // Every split with every batch size: the best size depends on the split (one big batch per
  // core thrashes the caches that one batch over every core does not).
  let best: RawConfig = { ...splits[0]!, batchSize: 32 };
  let bestRps = 0;
  for (const split of splits) {
    for (const batchSize of spec.rawBatchSizes) {
      const config = { ...split, batchSize };
      const rps = await tryRaw(config, sample);
      rawTrials[`${split.workers}x${split.intraOpThreads} b${batchSize}`] = rps;
      if (rps > bestRps) [best, bestRps] = [config, rps];
    }
  }
  const raw = await tryRaw(best, rows);
  log(
    `${spec.name}: raw ${raw.toFixed(2)} rec/s (${best.workers}x${best.intraOpThreads} threads, batch ${best.batchSize})`,
  );

  // Ours: the engine's defaults (one single-threaded worker per core, the CPU token budget).
  const engine = await startEngine(spec.modelFolder, spec.pipeline, { maxWaitMs: MAX_WAIT_MS });
  await Promise.all(spare.slice(0, 2 * 32).map((text) => engine.submit('bench', text)));
  const ours = await allAtOnce(engine, texts);
  const meanComputeMs = ours.stats.computeMs / ours.stats.batches;
  const p99ComputeMs = percentile(ours.batchComputeMs, 99);
  log(
    `${spec.name}: ours ${ours.recordsPerSecond.toFixed(2)} rec/s, ${ours.stats.batches} batches`,
  );
  const latencyTexts = spare.slice(2 * 32, 2 * 32 + input.latencyRecords);
  const latency = await atFixedLoad(engine, latencyTexts, ours.recordsPerSecond / 2);
  log(
    `${spec.name}: latency at ${latency.offeredPerSecond.toFixed(2)} rec/s: p50 ${latency.p50Ms.toFixed(1)} ms, p99 ${latency.p99Ms.toFixed(1)} ms`,
  );
  await engine.close();

  // transformers.js: its own pipeline on one session with every core, batch 1 or 32.
  const tjsTrials: Record<string, number> = {};
  const tjs = await spec.transformersJs(cores);
  let tjsBatch = input.transformersJsBatch ?? 1;
  let tjsRps = 0;
  let tjsOutputs: Awaited<ReturnType<TjsRunner['run']>> = [];
  try {
    await tjs.run(spare.slice(0, 32));
    const calibrationTexts = spare.slice(0, input.calibration);
    for (const batch of input.transformersJsBatch !== undefined ? [] : [1, 32]) {
      const t0 = performance.now();
      for (let i = 0; i < calibrationTexts.length; i += batch)
        await tjs.run(calibrationTexts.slice(i, i + batch));
      const rps = calibrationTexts.length / ((performance.now() - t0) / 1000);
      tjsTrials[`b${batch}`] = rps;
      if (rps > tjsRps) [tjsBatch, tjsRps] = [batch, rps];
    }
    const t0 = performance.now();
    tjsOutputs = [];
    for (let i = 0; i < texts.length; i += tjsBatch)
      tjsOutputs.push(...(await tjs.run(texts.slice(i, i + tjsBatch))));
    tjsRps = texts.length / ((performance.now() - t0) / 1000);
  } finally {
    await tjs.close();
  }
  log(`${spec.name}: transformers.js ${tjsRps.toFixed(2)} rec/s (batch ${tjsBatch})`);

  // transformers.js truncates by cutting the encoded ids, [SEP] included, where Python and we
  // keep [SEP]; so inputs longer than maxLength legitimately differ and are reported apart.
  let diff = 0;
  let diffTruncated = 0;
  let labelMismatches = 0;
  ours.outputs.forEach((output, i) => {
    const a = spec.ours(output);
    const b = tjsOutputs[i];
    if (b === undefined || a.label !== b.label) labelMismatches += 1;
    else if ((untruncated[i] ?? 0) > spec.maxLength)
      diffTruncated = Math.max(diffTruncated, maxAbsDiff(a.values, b.values));
    else diff = Math.max(diff, maxAbsDiff(a.values, b.values));
  });

  // FIFO ablation: the same pool, batches of 32 in arrival order (the window is the batch).
  const fifoEngine = await startEngine(spec.modelFolder, spec.pipeline, {
    maxWaitMs: MAX_WAIT_MS,
    sortWindow: 32,
    maxBatchSize: 32,
    maxBatchTokens: 2 ** 30,
  });
  await Promise.all(spare.slice(0, 2 * 32).map((text) => fifoEngine.submit('bench', text)));
  const fifo = await allAtOnce(fifoEngine, texts);
  await fifoEngine.close();
  log(`${spec.name}: fifo ${fifo.recordsPerSecond.toFixed(2)} rec/s`);

  return {
    task: spec.name,
    texts: texts.length,
    rps: { raw, ours: ours.recordsPerSecond, transformers_js: tjsRps, fifo: fifo.recordsPerSecond },
    raw: best,
    rawTrials,
    transformersJsBatch: tjsBatch,
    transformersJsTrials: tjsTrials,
    paddingEfficiency: {
      ours: ours.stats.realTokens / ours.stats.paddedTokens,
      fifo: fifo.stats.realTokens / fifo.stats.paddedTokens,
    },
    oursBatches: {
      count: ours.stats.batches,
      meanSize: ours.stats.items / ours.stats.batches,
      meanComputeMs,
      p99ComputeMs,
    },
    latency: {
      ...latency,
      boundMs: MAX_WAIT_MS + 2 * p99ComputeMs,
      boundMeanMs: MAX_WAIT_MS + 2 * meanComputeMs,
    },
    maxAbsDiff: diff,
    maxAbsDiffTruncated: diffTruncated,
    overLength: untruncated.filter((length) => length > spec.maxLength).length,
    labelMismatches,
    tokenization: {
      mainMsPerRecord,
      workerMsPerRecord,
      inferenceCoreMsPerRecord: (cores * 1000) / raw,
    },
    maxWaitMs: MAX_WAIT_MS,
  };
}
