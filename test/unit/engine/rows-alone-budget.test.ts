// A pipeline whose model is not batch invariant runs each row in a session call of its own, so its
// batches pad nothing and its default token budget is the rows-alone one (four 256-token records
// on CPU): int8 MiniLM's batches then carry several long records to a thread, while a
// batch-invariant model keeps the CPU's 256, and a configured maxBatchTokens holds for both.
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  DEFAULT_BATCH_TOKENS,
  DEFAULT_ROWS_ALONE_BATCH_TOKENS,
  type BatcherOptions,
} from '../../../src/batching/batcher-options.ts';
import { BatchEngine } from '../../../src/engine/batch-engine.ts';
import type { BatchDone } from '../../../src/engine/dispatcher.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const INT8 = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const FP32 = join(ROOT, 'test', 'fixtures', 'models', 'bert-feature-extraction');
// Each cut at its pipeline's maxLength: 200 tokens for int8, 64 for the fixture.
const texts = Array.from(
  { length: 12 },
  (_, i) => `record ${i}: ${'the quick brown fox jumps over the lazy dog '.repeat(40)}`,
);

const engines: BatchEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close('abort')));
});

async function batchesOf(batching: BatcherOptions): Promise<Map<string, BatchDone[]>> {
  const engine = await BatchEngine.start({
    models: { int8: { path: INT8 }, fp32: { path: FP32 } },
    pipelines: {
      quantized: { task: 'featureExtraction', model: 'int8', options: { maxLength: 200 } },
      invariant: { task: 'featureExtraction', model: 'fp32', options: { maxLength: 64 } },
    },
    shards: [{ device: 'cpu', threads: 1 }],
    batching,
  });
  engines.push(engine);
  const batches = new Map<string, BatchDone[]>([
    ['quantized', []],
    ['invariant', []],
  ]);
  engine.onBatch((batch) => batches.get(batch.pipeline)?.push(batch));
  const submitted = texts.flatMap((text) => [
    engine.submit<Float32Array>('quantized', text),
    engine.submit<Float32Array>('invariant', text),
  ]);
  const outputs = await Promise.all(submitted);
  expect(outputs.every((o) => o instanceof Float32Array && o.length > 0)).toBe(true);
  return batches;
}

describe("a rows-alone pipeline's token budget", () => {
  it('is the rows-alone default for a quantized model and the CPU default for an fp32 one', async () => {
    expect(DEFAULT_ROWS_ALONE_BATCH_TOKENS.cpu).toBeGreaterThanOrEqual(2 * 200);
    const batches = await batchesOf({ maxWaitMs: 200 });
    const quantized = batches.get('quantized') ?? [];
    const invariant = batches.get('invariant') ?? [];
    expect(quantized.reduce((n, b) => n + b.items, 0)).toBe(texts.length);
    expect(quantized.some((b) => b.items >= 2)).toBe(true);
    for (const b of quantized)
      expect(b.paddedTokens).toBeLessThanOrEqual(DEFAULT_ROWS_ALONE_BATCH_TOKENS.cpu);
    expect(invariant.reduce((n, b) => n + b.items, 0)).toBe(texts.length);
    for (const b of invariant) expect(b.paddedTokens).toBeLessThanOrEqual(DEFAULT_BATCH_TOKENS.cpu);
  });

  it('is the configured maxBatchTokens when one is set', async () => {
    const batches = await batchesOf({ maxWaitMs: 200, maxBatchTokens: 256 });
    const quantized = batches.get('quantized') ?? [];
    expect(quantized.length).toBe(texts.length);
    expect(quantized.every((b) => b.items === 1)).toBe(true);
  });
});
