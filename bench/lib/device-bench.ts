// One task's side-by-side run on a GPU: raw ONNX Runtime on the CUDA provider (pre-tokenized,
// length-sorted batches, the best of a small layout search), our engine on a `cuda:<id>` shard
// (its default, and the thread counts and pricings around it), transformers.js on its CUDA device,
// and our engine on every CPU core of the same machine, so one run gives gpu_vs_cpu. The searches
// are short on purpose: a GPU lease is minutes long.
import { performance } from 'node:perf_hooks';
import type { InferenceSession } from 'onnxruntime-node';
import type { BatcherOptions } from '../../src/batching/batcher-options.ts';
import { inputCost } from '../../src/engine/input-cost.ts';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.ts';
import { TextTokenizer } from '../../src/pipelines/runtime/text-tokenizer.ts';
import { DEFAULT_CUDA_THREADS, type ShardOption } from '../../src/shards/shard-spec.ts';
import { onnxFileOf, type Comparable, type TaskSpec } from './contenders.ts';
import { allAtOnce, startEngine } from './engine-runs.ts';
import { RawPool, cutBatches, describePolicy, type BatchPolicy } from './raw-pool.ts';
import { maxAbsDiff, round } from './stats.ts';
import { TjsPool } from './tjs-search.ts';

export interface DeviceInput {
  /** undefined: the same flow on the CPU provider, a smoke run of the machinery on any machine. */
  deviceId: number | undefined;
  texts: string[];
  /** Texts timed for the CPU engine (it is an order of magnitude slower). */
  cpuTexts: string[];
  warmup: string[];
  /** Timed passes over `texts` per contender; the best pass counts. */
  passes: number;
  /** Shard thread counts tried; the first is reported as ours. */
  cudaThreads: number[];
  /** Also time ours with main-process token pricing (slow: it is the ceiling being shown). */
  tokenPricing: boolean;
  rawWorkers: number[];
  tjsBatchSizes: number[];
  /** Texts transformers.js times (its rate is per record, so a slice only shortens the run). */
  tjsTexts: number;
  log: (line: string) => void;
}

export interface DeviceReport {
  task: string;
  texts: number;
  rps: { raw: number; ours: number; transformers_js: number; cpu_engine: number };
  raw: string;
  /** A trial that threw has its error instead of a rate: one failure must not cost the run. */
  rawTrials: Record<string, number | string>;
  transformersJs: string;
  transformersJsTrials: Record<string, number | string>;
  /** Ours by shard threads (token pricing and character pricing at the default threads). */
  oursTrials: Record<string, number | string>;
  /** Main-process pricing with the tokenizer, every text at once: the 'tokens' ceiling. */
  tokenPricingCeilingRps: number;
  maxAbsDiffVsCpu: number;
  labelMismatchesVsCpu: number;
}

const RAW_POLICIES: BatchPolicy[] = [
  { kind: 'rows', size: 64 },
  { kind: 'rows', size: 256 },
  { kind: 'tokens', budget: 8192, maxRows: 256 },
  { kind: 'tokens', budget: 16384, maxRows: 512 },
  { kind: 'tokens', budget: 32768, maxRows: 1024 },
];

const failure = (err: unknown): string =>
  `failed: ${err instanceof Error ? err.message : String(err)}`;

async function best<T>(passes: number, run: () => Promise<T>): Promise<{ rps: number; last: T }> {
  let bestSeconds = Infinity;
  let last: T | undefined;
  for (let i = 0; i < passes; i += 1) {
    const started = performance.now();
    last = await run();
    bestSeconds = Math.min(bestSeconds, (performance.now() - started) / 1000);
  }
  return { rps: 1 / bestSeconds, last: last as T };
}

export async function benchOnDevice(spec: TaskSpec, input: DeviceInput): Promise<DeviceReport> {
  const { texts, passes, log, deviceId } = input;
  const providers: InferenceSession.ExecutionProviderConfig[] =
    deviceId === undefined ? ['cpu'] : [{ name: 'cuda', deviceId }];
  const shard = (threads: number): ShardOption =>
    deviceId === undefined
      ? { device: 'cpu', threads, intraOpThreads: 1 }
      : { device: 'cuda', deviceId, threads };
  const tokenizer = await TextTokenizer.load(spec.modelFolder);
  const rows: number[][] = [];
  for (let i = 0; i < texts.length; i += 256) {
    const encoded = await tokenizer.encode(texts.slice(i, i + 256), {
      truncation: 'longest_first',
      maxLength: spec.maxLength,
    });
    rows.push(...encoded.map((e) => e.ids));
  }

  let started = performance.now();
  await Promise.all(
    texts.map((text) =>
      inputCost(text, { task: spec.pipeline.task, tokenizer, options: {}, pricing: 'tokens' }),
    ),
  );
  const tokenPricingCeilingRps = texts.length / ((performance.now() - started) / 1000);
  log(`${spec.name}: main-process token pricing ${tokenPricingCeilingRps.toFixed(0)} rec/s`);

  const onnxPath = `${spec.modelFolder}/${onnxFileOf(spec)}`;
  // The fp16 pass is the floor's figure alone: raw at its widest thread split, ours at the
  // default, no transformers.js; the other passes search and ablate.
  const half = spec.variant === 'fp16';
  const rawWorkers = half ? [Math.max(...input.rawWorkers)] : input.rawWorkers;
  const rawTrials: Record<string, number | string> = {};
  let rawBest = { label: '', rps: 0 };
  // onnxruntime-node's sessions (the hidden states come to the host), and the raw that issue 31
  // sets the floor against: one native session with pooling on its device, fp16 included.
  const rawKinds =
    spec.pipeline.task === 'featureExtraction'
      ? (['per-thread', 'pooled'] as const)
      : ['per-thread' as const];
  for (const kind of rawKinds)
    for (const workers of rawWorkers) {
      const layout = `${kind === 'pooled' ? 'pooled ' : ''}${workers}x`;
      try {
        const pool = await RawPool.start(onnxPath, {
          workers,
          intraOpThreads: 1,
          executionProviders: providers,
          sessions: kind,
        });
        try {
          for (const policy of RAW_POLICIES) {
            const batches = cutBatches(rows, policy);
            await pool.run(batches.slice(0, 8));
            const { rps } = await best(passes, () => pool.run(batches));
            const label = `${layout} ${describePolicy(policy)}`;
            rawTrials[label] = round(rps * texts.length, 1);
            if (rps * texts.length > rawBest.rps) rawBest = { label, rps: rps * texts.length };
          }
        } finally {
          await pool.close();
        }
      } catch (err) {
        rawTrials[layout] = failure(err);
        log(`${spec.name}: raw ${layout} ${String(rawTrials[layout])}`);
      }
    }
  log(`${spec.name}: raw ${rawBest.rps.toFixed(0)} rec/s (${rawBest.label})`);

  const oursTrials: Record<string, number | string> = {};
  let oursDefault = 0;
  let oursOutputs: unknown[] = [];
  // Pooling on the device is a cuda shard's default; naming it makes the CPU smoke run take the
  // same path (a linked run into the pooling graph). pooling=host is what it saves.
  const onDevice: RuntimeOptions = { poolingOn: 'device' };
  const variants: {
    label: string;
    threads: number;
    batching?: BatcherOptions;
    runtime: RuntimeOptions;
  }[] = half
    ? [
        {
          label: `threads=${DEFAULT_CUDA_THREADS}`,
          threads: DEFAULT_CUDA_THREADS,
          runtime: onDevice,
        },
      ]
    : [
        ...input.cudaThreads.map((t) => ({ label: `threads=${t}`, threads: t, runtime: onDevice })),
        {
          label: `threads=${DEFAULT_CUDA_THREADS} pooling=host`,
          threads: DEFAULT_CUDA_THREADS,
          runtime: { poolingOn: 'host' },
        },
        ...(input.tokenPricing
          ? [
              {
                label: `threads=${DEFAULT_CUDA_THREADS} pricing=tokens`,
                threads: DEFAULT_CUDA_THREADS,
                batching: { pricing: 'tokens' as const },
                runtime: onDevice,
              },
            ]
          : []),
      ];
  for (const variant of variants) {
    try {
      const engine = await startEngine(
        spec.modelFolder,
        spec.pipeline,
        variant.batching,
        [shard(variant.threads)],
        variant.runtime,
        spec.variant,
      );
      try {
        await allAtOnce(engine, input.warmup);
        const { rps, last } = await best(passes, () => allAtOnce(engine, texts));
        oursTrials[variant.label] = round(rps * texts.length, 1);
        if (variant === variants[0]) {
          oursDefault = rps * texts.length;
          oursOutputs = last.outputs;
        }
      } finally {
        await engine.close('drain');
      }
    } catch (err) {
      oursTrials[variant.label] = failure(err);
    }
    log(`${spec.name}: ours ${variant.label} ${oursTrials[variant.label]} rec/s`);
  }

  const tjsTrials: Record<string, number | string> = {};
  let tjsBest = { label: half ? 'not run' : 'failed', rps: NaN };
  const tjsTexts = texts.slice(0, input.tjsTexts);
  for (const batchSize of half ? [] : input.tjsBatchSizes) {
    const label = `b${batchSize}`;
    try {
      const pool = await TjsPool.start(
        spec,
        { workers: 1, intraOpThreads: 1 },
        deviceId === undefined ? 'cpu' : 'cuda',
      );
      try {
        await pool.run(input.warmup, batchSize);
        const { rps } = await best(passes, () => pool.run(tjsTexts, batchSize));
        tjsTrials[label] = round(rps * tjsTexts.length, 1);
        if (!(rps * tjsTexts.length <= tjsBest.rps))
          tjsBest = { label, rps: rps * tjsTexts.length };
      } finally {
        await pool.close();
      }
    } catch (err) {
      tjsTrials[label] = failure(err);
    }
  }
  log(`${spec.name}: transformers.js ${tjsBest.rps.toFixed(0)} rec/s (${tjsBest.label})`);

  // The CPU engine on all cores, as configured by default, on the same texts' first slice; its
  // outputs are the reference the GPU's are compared with (the folder's fp32 model.onnx, for the
  // fp16 pass too: the difference is the one its tolerance bounds).
  const cpu = await startEngine(spec.modelFolder, spec.pipeline);
  let cpuRps: number;
  let cpuOutputs: unknown[];
  try {
    await allAtOnce(cpu, input.warmup.slice(0, 64));
    started = performance.now();
    const run = await allAtOnce(cpu, input.cpuTexts);
    cpuRps = input.cpuTexts.length / ((performance.now() - started) / 1000);
    cpuOutputs = run.outputs;
  } finally {
    await cpu.close('drain');
  }
  log(`${spec.name}: CPU engine ${cpuRps.toFixed(0)} rec/s`);

  // NaN when ours failed at its default: no outputs to compare.
  let diff = oursOutputs.length === 0 ? NaN : 0;
  let labelMismatches = 0;
  if (oursOutputs.length > 0)
    cpuOutputs.forEach((output, i) => {
      const a: Comparable = spec.ours(output);
      const b: Comparable = spec.ours(oursOutputs[i]);
      if (a.label !== b.label) labelMismatches += 1;
      diff = Math.max(diff, maxAbsDiff(a.values, b.values));
    });

  return {
    task: spec.name,
    texts: texts.length,
    rps: { raw: rawBest.rps, ours: oursDefault, transformers_js: tjsBest.rps, cpu_engine: cpuRps },
    raw: rawBest.label,
    rawTrials,
    transformersJs: tjsBest.label,
    transformersJsTrials: tjsTrials,
    oursTrials,
    tokenPricingCeilingRps,
    maxAbsDiffVsCpu: diff,
    labelMismatchesVsCpu: labelMismatches,
  };
}
