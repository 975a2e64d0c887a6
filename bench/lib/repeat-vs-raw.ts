// `bench:throughput --repeat N`: the floors against raw ONNX Runtime are judged on several runs
// with their spread (issue 15), and a whole run (searches, transformers.js, ablations, latency)
// costs about 2,000 s. So the searches run once, and only raw in the layout they found and our
// engine with its defaults are timed again, taking turns (which one goes first alternates, so a
// load that drifts during the run weighs on both alike).
import { performance } from 'node:perf_hooks';
import type { BatcherOptions } from '../../src/batching/batcher-options.ts';
import type { TaskSpec } from './contenders.ts';
import { allAtOnce, startEngine } from './engine-runs.ts';
import { RawPool, describeConfig, type RawConfig, type RawSessions } from './raw-pool.ts';
import { searchRaw, timeRaw } from './raw-search.ts';
import { percentile, round } from './stats.ts';
import { addCpuSince, cpuByThreadKind, cpuPerRecord } from './thread-cpu.ts';

export interface RepeatRun {
  raw: number;
  ours: number;
  /** Raw in the same thread split, one row per session call (when asked for). */
  rawOneRow?: number;
  /** Raw in the same layout on one native session shared by its threads (when asked for). */
  rawShared?: number;
  /** Our engine priced by characters, its encodes made on the threads (when asked for). */
  oursByCharacters?: number;
  /** Our engine with the CPU's 256-token budget for every pipeline (when asked for). */
  oursBudget256?: number;
  /** Each contender's CPU milliseconds per record over its timed part, by thread kind. */
  cpu?: Partial<Record<Contender, Record<string, number>>>;
}

export type Contender =
  'raw' | 'ours' | 'rawOneRow' | 'rawShared' | 'oursByCharacters' | 'oursBudget256';

export interface Spread {
  /** ours ÷ raw of each run, in run order. */
  runs: number[];
  min: number;
  median: number;
  max: number;
}

export interface RepeatInput {
  spec: TaskSpec;
  texts: string[];
  /** The texts' ids, tokenized and truncated as every contender runs them. */
  rows: number[][];
  /** Texts for warming our engine up (not timed). */
  spare: string[];
  raw: RawConfig;
  runs: number;
  /** Run 1's order is ours first; each next run swaps. */
  firstRun: number;
  /**
   * Also time raw with one row per session call, between the other two: what raw does when a
   * record's output may not depend on its batch mates (dynamically quantized models).
   */
  oneRow?: boolean;
  /** Also time raw-shared (one C-API session for all raw's threads) in raw's layout. */
  shared?: boolean;
  /**
   * Also time our engine priced by characters (the CPU default until 2026-12-06): every encode
   * made on an inference thread, none carried from the main thread (docs/batching.md).
   */
  byCharacters?: boolean;
  /**
   * Also time our engine with the CPU's 256-token budget: what the rows-alone budget (1,024 for a
   * model that is not batch invariant, src/batching/batcher-options.ts) buys.
   */
  budget256?: boolean;
  log: (line: string) => void;
}

const MAX_WAIT_MS = 10;

/** Times raw (in `input.raw`'s layout) and our defaults `input.runs` times, taking turns. */
export async function repeatVsRaw(input: RepeatInput): Promise<RepeatRun[]> {
  const { spec, texts, rows, raw, log } = input;
  const onnxPath = `${spec.modelFolder}/model.onnx`;
  let cpu: NonNullable<RepeatRun['cpu']> = {};
  const timeRawOnce = async (
    config: RawConfig = raw,
    sessions: RawSessions = 'per-thread',
    contender: Contender = 'raw',
  ): Promise<number> => {
    const pool = await RawPool.start(onnxPath, {
      workers: config.workers,
      intraOpThreads: config.intraOpThreads,
      sessions,
    });
    try {
      const used = new Map<string, number>();
      const rps = await timeRaw(pool, rows, config, config.batching, used);
      if (rps === undefined) throw new Error(`raw: too few rows for ${describeConfig(config)}`);
      cpu[contender] = cpuPerRecord(used, rows.length);
      return rps;
    } finally {
      await pool.close();
    }
  };
  const timeOursOnce = async (
    contender: Contender = 'ours',
    batching: BatcherOptions = {},
  ): Promise<number> => {
    const engine = await startEngine(spec.modelFolder, spec.pipeline, {
      maxWaitMs: MAX_WAIT_MS,
      ...batching,
    });
    try {
      await Promise.all(input.spare.slice(0, 2 * 32).map((text) => engine.submit('bench', text)));
      const used = new Map<string, number>();
      const before = cpuByThreadKind();
      const rps = (await allAtOnce(engine, texts)).recordsPerSecond;
      addCpuSince(used, before);
      cpu[contender] = cpuPerRecord(used, texts.length);
      return rps;
    } finally {
      await engine.close();
    }
  };
  const runs: RepeatRun[] = [];
  for (let i = 0; i < input.runs; i += 1) {
    const n = input.firstRun + i;
    const oursFirst = n % 2 === 1;
    cpu = {};
    const first = await (oursFirst ? timeOursOnce() : timeRawOnce());
    const rawOneRow =
      input.oneRow === true
        ? await timeRawOnce(
            { ...raw, batching: { kind: 'rows', size: 1 } },
            'per-thread',
            'rawOneRow',
          )
        : undefined;
    const rawShared =
      input.shared === true ? await timeRawOnce(raw, 'shared', 'rawShared') : undefined;
    const oursByCharacters =
      input.byCharacters === true
        ? await timeOursOnce('oursByCharacters', { pricing: 'characters' })
        : undefined;
    const oursBudget256 =
      input.budget256 === true
        ? await timeOursOnce('oursBudget256', { maxBatchTokens: 256 })
        : undefined;
    const second = await (oursFirst ? timeRawOnce() : timeOursOnce());
    const run: RepeatRun = oursFirst ? { ours: first, raw: second } : { raw: first, ours: second };
    if (rawOneRow !== undefined) run.rawOneRow = rawOneRow;
    if (rawShared !== undefined) run.rawShared = rawShared;
    if (oursByCharacters !== undefined) run.oursByCharacters = oursByCharacters;
    if (oursBudget256 !== undefined) run.oursBudget256 = oursBudget256;
    run.cpu = cpu;
    runs.push(run);
    log(
      `${spec.name} run ${n}: raw ${run.raw.toFixed(2)}, ours ${run.ours.toFixed(2)} rec/s, ours ÷ raw ${(run.ours / run.raw).toFixed(3)}` +
        (rawOneRow === undefined
          ? ''
          : `; raw one row a call ${rawOneRow.toFixed(2)}, ours ÷ that ${(run.ours / rawOneRow).toFixed(3)}`) +
        (rawShared === undefined
          ? ''
          : `; raw-shared ${rawShared.toFixed(2)}, ours ÷ that ${(run.ours / rawShared).toFixed(3)}`) +
        (oursByCharacters === undefined
          ? ''
          : `; ours priced by characters ${oursByCharacters.toFixed(2)}, ours ÷ that ${(run.ours / oursByCharacters).toFixed(3)}`) +
        (oursBudget256 === undefined
          ? ''
          : `; ours at a 256-token budget ${oursBudget256.toFixed(2)}, ours ÷ that ${(run.ours / oursBudget256).toFixed(3)}`),
    );
  }
  return runs;
}

/**
 * Each contender's median over the runs of its CPU milliseconds per record, by thread kind
 * (WorkerThread: inference threads; MainThread; libuv-worker: the tokenizer's async calls;
 * V8Worker: the garbage collector's helpers), with their total.
 */
export function cpuMedians(
  runs: readonly RepeatRun[],
): Partial<Record<Contender, Record<string, number>>> {
  const out: Partial<Record<Contender, Record<string, number>>> = {};
  const contenders = new Set(runs.flatMap((run) => Object.keys(run.cpu ?? {}) as Contender[]));
  for (const contender of contenders) {
    const measured = runs.flatMap((run) => {
      const byKind = run.cpu?.[contender];
      return byKind === undefined ? [] : [byKind];
    });
    const kinds = new Set(measured.flatMap((byKind) => Object.keys(byKind)));
    const medians: Record<string, number> = {};
    for (const kind of kinds)
      medians[kind] = round(
        percentile(
          measured.map((byKind) => byKind[kind] ?? 0),
          50,
        ),
      );
    medians['total'] = round(
      percentile(
        measured.map((byKind) => Object.values(byKind).reduce((a, b) => a + b, 0)),
        50,
      ),
    );
    out[contender] = medians;
  }
  return out;
}

/** `bestRaw`: each run's better of raw and raw-shared. */
export function spread(
  runs: readonly RepeatRun[],
  against: Exclude<Contender, 'ours'> | 'bestRaw' = 'raw',
): Spread {
  const contender = (run: RepeatRun): number =>
    against === 'bestRaw' ? Math.max(run.raw, run.rawShared ?? 0) : (run[against] ?? Number.NaN);
  // A run that did not time the contender (the whole comparison's first run has no raw-shared)
  // is left out.
  const ratios = runs
    .filter((run) => against === 'bestRaw' || against === 'raw' || run[against] !== undefined)
    .map((run) => round(run.ours / contender(run)));
  return {
    runs: ratios,
    min: Math.min(...ratios),
    median: percentile(ratios, 50),
    max: Math.max(...ratios),
  };
}

export interface RawOnlyInput {
  spec: TaskSpec;
  texts: string[];
  spare: string[];
  rows: number[][];
  /** What the turns time, when not all of `texts` (bench:throughput --turn-texts). */
  turns?: { texts: string[]; rows: number[][] };
  cores: number;
  calibration: number;
  searchSeconds: number;
  runs: number;
  /** Also time raw one row a call (RepeatInput.oneRow). */
  oneRow?: boolean;
  /** Also time raw-shared (RepeatInput.shared). */
  shared?: boolean;
  /** Also time ours priced by characters (RepeatInput.byCharacters). */
  byCharacters?: boolean;
  /** Also time ours at the CPU's 256-token budget (RepeatInput.budget256). */
  budget256?: boolean;
  log: (line: string) => void;
}

/**
 * A task compared with raw alone (the int8 MiniLM pass): raw's layout search on an evenly
 * spaced sample of the length-sorted rows, as for the full tasks, then `runs` turns.
 */
export async function vsRawOnly(
  input: RawOnlyInput,
): Promise<{ raw: RawConfig; searchSeconds: number; runs: RepeatRun[] }> {
  const { spec, rows, log } = input;
  const started = performance.now();
  const bySize = [...rows].sort((a, b) => a.length - b.length);
  const calibration = Math.min(bySize.length, input.calibration);
  const step = bySize.length / calibration;
  const sample = Array.from(
    { length: calibration },
    (_, i) => bySize[Math.floor(i * step)] as number[],
  );
  const search = await searchRaw(
    `${spec.modelFolder}/model.onnx`,
    sample,
    input.cores,
    { ...spec.rawSearch, maxSeconds: input.searchSeconds },
    log,
  );
  const searchSeconds = (performance.now() - started) / 1000;
  log(
    `${spec.name}: raw search picked ${describeConfig(search.best)} in ${searchSeconds.toFixed(0)} s`,
  );
  const runs = await repeatVsRaw({
    spec,
    texts: input.turns?.texts ?? input.texts,
    rows: input.turns?.rows ?? rows,
    spare: input.spare,
    raw: search.best,
    runs: input.runs,
    firstRun: 1,
    oneRow: input.oneRow === true,
    shared: input.shared === true,
    byCharacters: input.byCharacters === true,
    budget256: input.budget256 === true,
    log,
  });
  return { raw: search.best, searchSeconds, runs };
}
