// transformers.js given its best layout: `workers` pipelines of `intraOpThreads` session threads
// each, every pipeline on a worker thread of its own (contenders.ts), fed batches of texts in arrival order as each frees, searched over every thread split of
// the cores x batch size on calibration texts (per task), the finalists run again. Pruned like
// the raw search (bench/lib/raw-search.ts).
import { performance } from 'node:perf_hooks';
import { transformersJs, type Comparable, type TaskSpec, type TjsRunner } from './contenders.ts';
import { threadSplits, type ThreadSplit } from './raw-pool.ts';
import { PRUNE_BELOW } from './raw-search.ts';
import type { TjsDevice } from './transformers-js.ts';

export interface TjsConfig extends ThreadSplit {
  batchSize: number;
}

export const describeTjs = (c: TjsConfig): string =>
  `${c.workers}x${c.intraOpThreads} b${c.batchSize}`;

export class TjsPool {
  private readonly runners: TjsRunner[];

  private constructor(runners: TjsRunner[]) {
    this.runners = runners;
  }

  static async start(
    spec: TaskSpec,
    split: ThreadSplit,
    device: TjsDevice = 'cpu',
  ): Promise<TjsPool> {
    const runners: TjsRunner[] = [];
    try {
      // One at a time: each loads its own copy of the model.
      for (let i = 0; i < split.workers; i += 1)
        runners.push(await transformersJs(spec, split.intraOpThreads, device));
    } catch (err) {
      await Promise.all(runners.map((r) => r.close()));
      throw err;
    }
    return new TjsPool(runners);
  }

  get workers(): number {
    return this.runners.length;
  }

  /** Every text once, in batches of `batchSize` taken in order; outputs in input order. */
  async run(texts: readonly string[], batchSize: number): Promise<Comparable[]> {
    const outputs: Comparable[] = new Array<Comparable>(texts.length);
    let next = 0;
    await Promise.all(
      this.runners.map(async (runner) => {
        while (next < texts.length) {
          const start = next;
          next += batchSize;
          const batch = texts.slice(start, start + batchSize);
          (await runner.run(batch)).forEach((output, i) => (outputs[start + i] = output));
        }
      }),
    );
    return outputs;
  }

  async close(): Promise<void> {
    await Promise.all(this.runners.map((r) => r.close()));
  }
}

async function timeTjs(
  pool: TjsPool,
  texts: readonly string[],
  batchSize: number,
): Promise<number | undefined> {
  // Every worker must get a full batch, or an idle one would make the split look slow.
  if (texts.length < pool.workers * batchSize) return undefined;
  await pool.run(texts.slice(0, pool.workers * batchSize), batchSize);
  const started = performance.now();
  await pool.run(texts, batchSize);
  return texts.length / ((performance.now() - started) / 1000);
}

export interface TjsSearch {
  best: TjsConfig;
  trials: Record<string, number | string>;
  finalists: Record<string, number[]>;
  seconds: number;
}

export async function searchTjs(
  spec: TaskSpec,
  texts: readonly string[],
  cores: number,
  batchSizes: readonly number[],
  maxSeconds: number,
  log: (line: string) => void,
): Promise<TjsSearch> {
  const started = performance.now();
  const trials: Record<string, number | string> = {};
  const measured: { config: TjsConfig; rps: number }[] = [];
  const splits = threadSplits(cores);
  for (const split of splits) {
    const deadline = performance.now() + (maxSeconds * 1000) / splits.length;
    const pool = await TjsPool.start(spec, split);
    try {
      let best = 0;
      let below = 0;
      let pruned = false;
      for (const batchSize of batchSizes) {
        const config = { ...split, batchSize };
        if (pruned) {
          trials[describeTjs(config)] =
            `pruned: two smaller ones ran below ${PRUNE_BELOW} x the best`;
          continue;
        }
        if (performance.now() > deadline) {
          trials[describeTjs(config)] = `not timed: the split's share of ${maxSeconds} s was spent`;
          continue;
        }
        const rps = await timeTjs(pool, texts, batchSize);
        if (rps === undefined) {
          trials[describeTjs(config)] = 'not timed: fewer texts than one batch per worker';
          continue;
        }
        trials[describeTjs(config)] = rps;
        log(`${spec.name}: transformers.js trial ${describeTjs(config)}: ${rps.toFixed(2)} rec/s`);
        measured.push({ config, rps });
        // Two in a row below: one noisy trial must not end the walk.
        below = rps < PRUNE_BELOW * best ? below + 1 : 0;
        if (below >= 2) pruned = true;
        best = Math.max(best, rps);
      }
    } finally {
      await pool.close();
    }
    log(`${spec.name}: transformers.js search: ${split.workers}x${split.intraOpThreads} done`);
  }
  if (measured.length === 0)
    throw new Error('transformers.js search: nothing could be timed; give it more texts');
  measured.sort((a, b) => b.rps - a.rps);
  const finalists: Record<string, number[]> = {};
  let best = (measured[0] as { config: TjsConfig }).config;
  let bestMean = 0;
  for (const { config, rps } of measured.slice(0, 3)) {
    const pool = await TjsPool.start(spec, config);
    let again: number | undefined;
    try {
      again = await timeTjs(pool, texts, config.batchSize);
    } finally {
      await pool.close();
    }
    const runs = again === undefined ? [rps] : [rps, again];
    finalists[describeTjs(config)] = runs;
    const mean = runs.reduce((a, b) => a + b, 0) / runs.length;
    if (mean > bestMean) [best, bestMean] = [config, mean];
  }
  return { best, trials, finalists, seconds: (performance.now() - started) / 1000 };
}
