import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isBatchInvariant } from '../../../src/pipelines/runtime/batch-invariance.ts';
import type { LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';
import type { Pipeline } from '../../../src/pipelines/pipeline.ts';
import { batchSafe, RowByRowPipeline } from '../../../src/pipelines/row-by-row.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { FeatureExtractionPipeline } from '../../../src/pipelines/text/feature-extraction.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');

describe('batch invariance', () => {
  const scratch = mkdtemp(join(tmpdir(), 'batch-invariance-'));
  afterAll(async () => rm(await scratch, { recursive: true, force: true }));

  it('calls a dynamically quantized model batch-dependent and an fp32 model batch-invariant', async () => {
    expect(await isBatchInvariant(join(ROOT, 'models/all-MiniLM-L6-v2-int8/model.onnx'))).toBe(
      false,
    );
    expect(
      await isBatchInvariant(join(ROOT, 'test/fixtures/models/bert-feature-extraction/model.onnx')),
    ).toBe(true);
  });

  it('finds an operator name that straddles two read chunks', async () => {
    const file = join(await scratch, 'straddle.onnx');
    const marker = Buffer.from('DynamicQuantizeLinear', 'latin1');
    // The scan reads 1 MiB chunks: put the marker across the first boundary.
    const body = Buffer.alloc((1 << 20) + 64, 0x20);
    marker.copy(body, (1 << 20) - 10);
    await writeFile(file, body);
    expect(await isBatchInvariant(file)).toBe(false);
    await writeFile(file, Buffer.alloc((1 << 20) + 64, 0x20));
    expect(await isBatchInvariant(file)).toBe(true);
    // And across a later boundary, where the carried tail sits before a full chunk.
    const longer = Buffer.alloc((3 << 20) + 64, 0x20);
    marker.copy(longer, (2 << 20) - 7);
    await writeFile(file, longer);
    expect(await isBatchInvariant(file)).toBe(false);
  });

  it('runs a batch-dependent model one record per call, in order', async () => {
    const calls: string[][] = [];
    const inner: Pipeline<string, string> = {
      task: 'fake',
      model: { batchInvariant: false } as LoadedModel,
      run: (inputs) => {
        calls.push([...inputs]);
        return Promise.resolve(inputs.map((i) => i.toUpperCase()));
      },
    };
    const safe = batchSafe(inner);
    expect(safe).toBeInstanceOf(RowByRowPipeline);
    expect(await safe.run(['a', 'b', 'c'])).toEqual(['A', 'B', 'C']);
    expect(calls).toEqual([['a'], ['b'], ['c']]);
    const invariant = { ...inner, model: { batchInvariant: true } as LoadedModel };
    expect(batchSafe(invariant)).toBe(invariant);
    const splitting = { ...inner, splitsRows: true };
    expect(batchSafe(splitting)).toBe(splitting);
  });

  it('embeds with an int8 model one row per call after tokenizing the batch once', async () => {
    const store = new ModelStore();
    try {
      const model = await store.load({
        path: join(ROOT, 'models/all-MiniLM-L6-v2-int8'),
        runtime: { binding: 'native' },
      });
      expect(model.batchInvariant).toBe(false);
      const texts = [
        'A short note.',
        'The quarterly report is attached; please review the figures before Friday.',
        'Thanks!',
      ];
      const pipeline = new FeatureExtractionPipeline(model);
      expect(batchSafe(pipeline)).toBe(pipeline);
      const batched = (await pipeline.run(texts)) as Float32Array[];
      const stats = pipeline.statistics;
      expect(stats?.tokenize.calls).toBe(1);
      expect(stats?.inference.calls).toBe(texts.length);
      // Each row is what the text gives alone, to the bit: its batch mates change nothing.
      const alone = new RowByRowPipeline(new FeatureExtractionPipeline(model));
      expect(await alone.run(texts)).toEqual(batched);
      const reordered = (await pipeline.run([...texts].reverse())) as Float32Array[];
      expect(reordered.reverse()).toEqual(batched);
    } finally {
      await store.close();
    }
  });
});
