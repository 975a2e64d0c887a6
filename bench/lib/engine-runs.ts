// Our engine as a contender: every record submitted at once for throughput, then an open-loop
// Poisson arrival process at a fixed rate for per-record latency.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BatcherOptions } from '../../src/batching/batcher-options.ts';
import type { DispatchStats } from '../../src/engine/dispatcher.ts';
import { BatchEngine, type BatchEnginePipeline } from '../../src/engine/batch-engine.ts';
import type { RuntimeOptions } from '../../src/runtime/runtime-options.ts';
import type { ShardOption } from '../../src/shards/shard-spec.ts';
import { percentile } from './stats.ts';

export interface EngineContender {
  engine: BatchEngine;
  close(): Promise<void>;
}

export async function startEngine(
  modelPath: string,
  pipeline: Omit<BatchEnginePipeline, 'model'>,
  batching?: BatcherOptions,
  shards?: ShardOption[],
  runtime?: RuntimeOptions,
  variant?: 'fp16',
): Promise<BatchEngine> {
  return BatchEngine.start({
    models: {
      model: {
        path: modelPath,
        ...(runtime !== undefined ? { runtime } : {}),
        ...(variant !== undefined ? { variant } : {}),
      },
    },
    pipelines: { bench: { ...pipeline, model: 'model' } },
    ...(batching !== undefined ? { batching } : {}),
    ...(shards !== undefined ? { shards } : {}),
  });
}

export interface ThroughputRun<T> {
  recordsPerSecond: number;
  outputs: T[];
  stats: DispatchStats;
  /** Every batch's compute time, in milliseconds. */
  batchComputeMs: number[];
}

export async function allAtOnce<T>(
  engine: BatchEngine,
  texts: readonly string[],
): Promise<ThroughputRun<T>> {
  const batchComputeMs: number[] = [];
  const stopListening = engine.onBatch((batch) => batchComputeMs.push(batch.computeMs));
  const before = engine.stats;
  const started = performance.now();
  const outputs = await Promise.all(texts.map((text) => engine.submit<T>('bench', text)));
  const seconds = (performance.now() - started) / 1000;
  const after = engine.stats;
  const stats: DispatchStats = {
    batches: after.batches - before.batches,
    items: after.items - before.items,
    realTokens: after.realTokens - before.realTokens,
    paddedTokens: after.paddedTokens - before.paddedTokens,
    computeMs: after.computeMs - before.computeMs,
  };
  stopListening();
  return { recordsPerSecond: texts.length / seconds, outputs, stats, batchComputeMs };
}

export interface LatencyRun {
  offeredPerSecond: number;
  achievedPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  meanBatchSize: number;
}

/** Exponential gaps from a fixed seed, so every run offers the same arrival pattern. */
function arrivalGaps(count: number, ratePerSecond: number): number[] {
  let state = 0x2545f491;
  const uniform = (): number => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 2 ** 32;
  };
  return Array.from({ length: count }, () => (-Math.log(uniform()) / ratePerSecond) * 1000);
}

export async function atFixedLoad(
  engine: BatchEngine,
  texts: readonly string[],
  ratePerSecond: number,
): Promise<LatencyRun> {
  const gaps = arrivalGaps(texts.length, ratePerSecond);
  const latencies: number[] = [];
  const pending: Promise<void>[] = [];
  const before = engine.stats;
  const started = performance.now();
  let due = started;
  for (const [i, text] of texts.entries()) {
    due += gaps[i] ?? 0;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const submitted = performance.now();
    pending.push(
      engine.submit('bench', text).then(() => {
        latencies.push(performance.now() - submitted);
      }),
    );
  }
  await Promise.all(pending);
  const after = engine.stats;
  return {
    offeredPerSecond: ratePerSecond,
    achievedPerSecond: texts.length / ((performance.now() - started) / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    meanBatchSize: (after.items - before.items) / Math.max(1, after.batches - before.batches),
  };
}
