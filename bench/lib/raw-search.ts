// The raw contender's calibration: every thread split of the cores x every batch policy (fixed
// batch sizes, and length-bucketed batches under a token budget) on an evenly spaced sample of
// the rows; the finalists run again and the best mean wins. Bounded two ways: a policy family's
// walk stops once throughput has fallen well below its best (throughput over batch size rises
// to one peak, then falls), and a policy that would leave a worker without two batches of the
// sample is not timed at all (idle workers would make its split look slow, not the policy).
// A walk stops after two policies in a row below PRUNE_BELOW x its best, and the trials stop
// when the search's time budget is spent.
import { performance } from 'node:perf_hooks';
import { addCpuSince, cpuByThreadKind } from './thread-cpu.ts';
import {
  RawPool,
  cutBatches,
  describeConfig,
  threadSplits,
  type BatchPolicy,
  type RawConfig,
  type ThreadSplit,
} from './raw-pool.ts';

export interface RawSearchSpace {
  batchSizes: number[];
  tokenBudgets: number[];
  /** Row cap of the token-budget batches. */
  maxRows: number;
  /** Time budget of the trials (the finalists' re-runs come on top). */
  maxSeconds: number;
}

export interface RawSearch {
  best: RawConfig;
  bestRps: number;
  /** records/s per config tried, or why a config was not timed. */
  trials: Record<string, number | string>;
  finalists: Record<string, number[]>;
  seconds: number;
}

/** A family's walk stops after two policies in a row this far below the family's best. */
export const PRUNE_BELOW = 0.75;
const FINALISTS = 3;

/**
 * Times one policy on a running pool; undefined when the sample is too small to judge it. `cpu`
 * gets the timed part's CPU milliseconds by thread kind added (thread-cpu.ts).
 */
export async function timeRaw(
  pool: RawPool,
  rows: readonly number[][],
  split: ThreadSplit,
  policy: BatchPolicy,
  cpu?: Map<string, number>,
): Promise<number | undefined> {
  const batches = cutBatches(rows, policy);
  if (batches.length < 2 * split.workers) return undefined;
  // Warm-up on the longest batches: the arena grows to the largest shape before the clock runs.
  await pool.run(batches.slice(-split.workers));
  const before = cpu === undefined ? undefined : cpuByThreadKind();
  const started = performance.now();
  await pool.run(batches);
  const seconds = (performance.now() - started) / 1000;
  if (cpu !== undefined && before !== undefined) addCpuSince(cpu, before);
  return rows.length / seconds;
}

export async function searchRaw(
  onnxPath: string,
  sample: readonly number[][],
  cores: number,
  space: RawSearchSpace,
  log: (line: string) => void,
): Promise<RawSearch> {
  const started = performance.now();
  const trials: Record<string, number | string> = {};
  const measured: { config: RawConfig; rps: number }[] = [];
  const families: BatchPolicy[][] = [
    space.batchSizes.map((size) => ({ kind: 'rows' as const, size })),
    space.tokenBudgets.map((budget) => ({
      kind: 'tokens' as const,
      budget,
      maxRows: space.maxRows,
    })),
  ];
  const splits = threadSplits(cores);
  for (const split of splits) {
    // Each split gets an equal share of the time budget; the families take turns within it, so
    // a spent budget leaves the largest policies of both untried, not a whole family.
    const deadline = performance.now() + (space.maxSeconds * 1000) / splits.length;
    const walks = families.map(() => ({ best: 0, below: 0, pruned: false }));
    const turns = families
      .flatMap((family, f) => family.map((batching, i) => ({ f, i, batching })))
      .sort((a, b) => a.i - b.i || a.f - b.f);
    const pool = await RawPool.start(onnxPath, split);
    try {
      for (const { f, batching } of turns) {
        const walk = walks[f] as (typeof walks)[number];
        const config: RawConfig = { ...split, batching };
        const name = describeConfig(config);
        if (walk.pruned) {
          trials[name] = `pruned: two smaller ones ran below ${PRUNE_BELOW} x the best`;
          continue;
        }
        if (performance.now() > deadline) {
          trials[name] = `not timed: the split's share of ${space.maxSeconds} s was spent`;
          continue;
        }
        const rps = await timeRaw(pool, sample, split, batching);
        if (rps === undefined) {
          trials[name] = 'not timed: fewer than 2 batches per worker in the sample';
          continue;
        }
        trials[name] = rps;
        log(`raw trial ${name}: ${rps.toFixed(2)} rec/s`);
        measured.push({ config, rps });
        // Two in a row below: one noisy trial must not end the walk.
        walk.below = rps < PRUNE_BELOW * walk.best ? walk.below + 1 : 0;
        if (walk.below >= 2) walk.pruned = true;
        walk.best = Math.max(walk.best, rps);
      }
    } finally {
      await pool.close();
    }
    log(`raw search: ${split.workers}x${split.intraOpThreads} done`);
  }
  if (measured.length === 0)
    throw new Error('raw search: no config could be timed; give the calibration more rows');
  // One lucky trial must not pick the config: the best few run again, the best mean wins.
  measured.sort((a, b) => b.rps - a.rps);
  const finalists: Record<string, number[]> = {};
  let best = measured[0] as { config: RawConfig; rps: number };
  let bestMean = 0;
  for (const { config, rps } of measured.slice(0, FINALISTS)) {
    const pool = await RawPool.start(onnxPath, config);
    let again: number | undefined;
    try {
      again = await timeRaw(pool, sample, config, config.batching);
    } finally {
      await pool.close();
    }
    const runs = again === undefined ? [rps] : [rps, again];
    finalists[describeConfig(config)] = runs;
    const mean = runs.reduce((a, b) => a + b, 0) / runs.length;
    if (mean > bestMean) [best, bestMean] = [{ config, rps: mean }, mean];
  }
  return {
    best: best.config,
    bestRps: bestMean,
    trials,
    finalists,
    seconds: (performance.now() - started) / 1000,
  };
}
