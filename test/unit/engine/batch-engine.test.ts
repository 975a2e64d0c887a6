import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigError,
  DeadlineExceededError,
  InputError,
  UnknownPipelineError,
} from '../../../src/errors.ts';
import { BatchEngine } from '../../../src/engine/batch-engine.ts';
import type { BatchDone } from '../../../src/engine/dispatcher.ts';
import { createHugot, type Hugot } from '../../../src/hugot.ts';
import type { LabelScore } from '../../../src/pipelines/text/text-classification.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const models = {
  fe: { path: join(FIXTURES, 'bert-feature-extraction') },
  cls: { path: join(FIXTURES, 'bert-text-classification') },
  mlm: { path: join(FIXTURES, 'bert-fill-mask') },
};
const pipelines = {
  embed: { task: 'featureExtraction', model: 'fe', options: { normalize: true } },
  classify: { task: 'textClassification', model: 'cls', options: { topK: null } },
  fill: { task: 'fillMask', model: 'mlm', options: { topK: 1 } },
};
const texts = Array.from({ length: 120 }, (_, i) => `${'word '.repeat(1 + ((i * 7) % 40))}#${i}`);

let engine: BatchEngine;
let direct: Hugot;

beforeAll(async () => {
  engine = await BatchEngine.start({
    models,
    pipelines,
    shards: [{ device: 'cpu', threads: 2 }],
    batching: { maxBatchSize: 16, maxWaitMs: 5 },
  });
  direct = createHugot();
  direct.registerModel('fe', models.fe);
  direct.registerModel('cls', models.cls);
  await direct.registerPipeline('embed', pipelines.embed);
  await direct.registerPipeline('classify', pipelines.classify);
});

afterAll(async () => {
  await engine.close('abort');
  await direct.close();
});

describe('engine: submit over batcher and worker threads', () => {
  it('gives every input the result the pipeline gives it directly', async () => {
    const heard: BatchDone[] = [];
    const stopHearing = engine.onBatch((batch) => heard.push(batch));
    const [viaEngine, viaDirect] = await Promise.all([
      Promise.all(texts.map((t) => engine.submit<Float32Array>('embed', t))),
      direct.run<Float32Array>('embed', texts),
    ]);
    for (const [i, vector] of viaEngine.entries()) {
      const expected = viaDirect[i] as Float32Array;
      expect(vector).toBeInstanceOf(Float32Array);
      expect(Math.max(...vector.map((v, j) => Math.abs(v - (expected[j] ?? NaN))))).toBeLessThan(
        1e-5,
      );
    }
    const labels = await Promise.all(
      texts.slice(0, 20).map((t) => engine.submit<LabelScore[]>('classify', t)),
    );
    const expectedLabels = await direct.run<LabelScore[]>('classify', texts.slice(0, 20));
    expect(labels.map((l) => l[0]?.label)).toEqual(expectedLabels.map((l) => l[0]?.label));
    const { batches, items, realTokens, paddedTokens, computeMs } = engine.stats;
    expect(items).toBe(texts.length + 20);
    expect(batches).toBeGreaterThan(items / 16 - 1);
    expect(realTokens).toBeLessThanOrEqual(paddedTokens);
    expect(heard.reduce((n, b) => n + b.items, 0)).toBe(items);
    expect(heard).toHaveLength(batches);
    expect(heard.reduce((ms, b) => ms + b.computeMs, 0)).toBeCloseTo(computeMs, 6);
    expect(new Set(heard.map((b) => b.pipeline))).toEqual(new Set(['embed', 'classify']));
    stopHearing();
  });

  it('fails only the input a pipeline refuses, not its batch mates', async () => {
    const inputs = [
      'The [MASK] is here.',
      'no mask token at all',
      'Send the [MASK] now.',
      'A [MASK] day.',
    ];
    const results = await Promise.allSettled(inputs.map((t) => engine.submit('fill', t)));
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(InputError);
  });

  it('completes an input whose deadline passed with a timeout and never runs it', async () => {
    const busy = texts.map((t) => engine.submit('embed', t));
    const late = engine.submit('embed', 'too late', { timeoutMs: 0 });
    await expect(late).rejects.toThrow(DeadlineExceededError);
    await Promise.all(busy);
  });

  it('rejects an unknown pipeline and a bad config with the field named', async () => {
    await expect(engine.submit('nope', 'x')).rejects.toThrow(UnknownPipelineError);
    await expect(
      BatchEngine.start({
        models,
        pipelines: { p: { task: 'textClassification', model: 'ghost' } },
      }),
    ).rejects.toThrow(/pipelines\.p\.model: no model 'ghost'/);
    await expect(
      BatchEngine.start({ models, pipelines: { p: { task: 'embed', model: 'fe' } } }),
    ).rejects.toThrow(ConfigError);
  });

  it('drains on close: everything submitted before close completes', async () => {
    const own = await BatchEngine.start({
      models,
      pipelines,
      shards: [{ device: 'cpu', threads: 1 }],
    });
    const pending = texts.slice(0, 40).map((t) => own.submit<Float32Array>('embed', t));
    await own.close('drain');
    expect((await Promise.all(pending)).every((v) => v.length === 32)).toBe(true);
    await expect(own.submit('embed', 'after close')).rejects.toThrow(/closed/);
  });

  it('drains inputs whose price is known at once, submitted right before close', async () => {
    // 'characters' pricing settles within microtasks of submit; a drain must still wait until
    // each input is queued, or it stops the threads with the inputs stranded in the queue.
    for (const pricing of ['characters', 'tokens'] as const) {
      const own = await BatchEngine.start({
        models,
        pipelines,
        shards: [{ device: 'cpu', threads: 1 }],
        batching: { pricing },
      });
      const pending = texts.slice(0, 10).map((t) => own.submit<Float32Array>('embed', t));
      await own.close('drain');
      const outputs = await Promise.all(pending);
      expect(outputs.map((v) => v.length)).toEqual(Array(10).fill(32));
    }
  });
});
