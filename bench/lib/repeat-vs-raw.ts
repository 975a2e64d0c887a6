// `bench:throughput --repeat N`: the floors against raw ONNX Runtime are judged on several runs
// with their spread (issue 15), and a whole run (searches, transformers.js, ablations, latency)
// costs about 2,000 s. So the searches run once, and only raw in the layout they found and our
// engine with its defaults are timed again, taking turns (which one goes first alternates, so a
// load that drifts during the run weighs on both alike).
import { performance } from 'node:perf_hooks';
import type { TaskSpec } from './contenders.ts';
import { allAtOnce, startEngine } from './engine-runs.ts';
import { RawPool, describeConfig, type RawConfig, type RawSessions } from './raw-pool.ts';
import { searchRaw, timeRaw } from './raw-search.ts';
import { percentile, round } from './stats.ts';

export interface RepeatRun {
  raw: number;
  ours: number;
  /** Raw in the same thread split, one row per session call (when asked for). */
  rawOneRow?: number;
  /** Raw in the same layout on one native session shared by its threads (when asked for). */
  rawShared?: number;
  /** Our engine priced by characters, its encodes made on the threads (when asked for). */
  oursByCharacters?: number;
}

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
  log: (line: string) => void;
}

const MAX_WAIT_MS = 10;

/** Times raw (in `input.raw`'s layout) and our defaults `input.runs` times, taking turns. */
export async function repeatVsRaw(input: RepeatInput): Promise<RepeatRun[]> {
  const { spec, texts, rows, raw, log } = input;
  const onnxPath = `${spec.modelFolder}/model.onnx`;
  const timeRawOnce = async (
    config: RawConfig = raw,
    sessions: RawSessions = 'per-thread',
  ): Promise<number> => {
    const pool = await RawPool.start(onnxPath, {
      workers: config.workers,
      intraOpThreads: config.intraOpThreads,
      sessions,
    });
    try {
      const rps = await timeRaw(pool, rows, config, config.batching);
      if (rps === undefined) throw new Error(`raw: too few rows for ${describeConfig(config)}`);
      return rps;
    } finally {
      await pool.close();
    }
  };
  const timeOursOnce = async (pricing?: 'characters'): Promise<number> => {
    const engine = await startEngine(spec.modelFolder, spec.pipeline, {
      maxWaitMs: MAX_WAIT_MS,
      ...(pricing !== undefined ? { pricing } : {}),
    });
    try {
      await Promise.all(input.spare.slice(0, 2 * 32).map((text) => engine.submit('bench', text)));
      return (await allAtOnce(engine, texts)).recordsPerSecond;
    } finally {
      await engine.close();
    }
  };
  const runs: RepeatRun[] = [];
  for (let i = 0; i < input.runs; i += 1) {
    const n = input.firstRun + i;
    const oursFirst = n % 2 === 1;
    const first = await (oursFirst ? timeOursOnce() : timeRawOnce());
    const rawOneRow =
      input.oneRow === true
        ? await timeRawOnce({ ...raw, batching: { kind: 'rows', size: 1 } })
        : undefined;
    const rawShared = input.shared === true ? await timeRawOnce(raw, 'shared') : undefined;
    const oursByCharacters =
      input.byCharacters === true ? await timeOursOnce('characters') : undefined;
    const second = await (oursFirst ? timeRawOnce() : timeOursOnce());
    const run: RepeatRun = oursFirst ? { ours: first, raw: second } : { raw: first, ours: second };
    if (rawOneRow !== undefined) run.rawOneRow = rawOneRow;
    if (rawShared !== undefined) run.rawShared = rawShared;
    if (oursByCharacters !== undefined) run.oursByCharacters = oursByCharacters;
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
          : `; ours priced by characters ${oursByCharacters.toFixed(2)}, ours ÷ that ${(run.ours / oursByCharacters).toFixed(3)}`),
    );
  }
  return runs;
}

/** `bestRaw`: each run's better of raw and raw-shared. */
export function spread(
  runs: readonly RepeatRun[],
  against: 'raw' | 'rawOneRow' | 'rawShared' | 'oursByCharacters' | 'bestRaw' = 'raw',
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
    log,
  });
  return { raw: search.best, searchSeconds, runs };
}
