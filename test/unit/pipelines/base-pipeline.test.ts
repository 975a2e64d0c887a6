import { join } from 'node:path';
import { Tensor } from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError, InferenceError, InputError } from '../../../src/errors.ts';
import { createHugot, type Hugot } from '../../../src/hugot.ts';
import { readySchema } from '../../../src/options/lazy-schema.ts';
import { BasePipeline } from '../../../src/pipelines/base-pipeline.ts';
import { ModelStore, type LoadedModel } from '../../../src/pipelines/runtime/model-store.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');

// A pipeline that feeds the model a tensor of the wrong type, to see how a runtime failure surfaces.
class WrongFeeds extends BasePipeline<string, number, z.ZodObject> {
  constructor(model: LoadedModel) {
    super('wrongFeeds', model, readySchema(z.object({}).strict()), {});
  }

  protected async runBatch(inputs: readonly string[]): Promise<number[]> {
    const name = this.model.inputNames[0] ?? 'input_ids';
    await this.infer({ [name]: new Tensor('float32', new Float32Array(2), [1, 2]) });
    return inputs.map(() => 0);
  }
}

describe('BasePipeline', () => {
  let hugot: Hugot;
  const store = new ModelStore();

  beforeAll(async () => {
    hugot = createHugot();
    hugot.registerModel('bert', { path: join(FIXTURES, 'bert-text-classification') });
    await hugot.registerPipeline('classify', { task: 'textClassification', model: 'bert' });
  });
  afterAll(async () => {
    await hugot.close();
    await store.close();
  });

  it('counts batches, inputs, tokenizer and runtime calls', async () => {
    const pipeline = hugot.pipeline('classify');
    expect(pipeline.statistics).toMatchObject({ batches: 0, inputs: 0 });
    await pipeline.run(['one text', 'and a second, longer text']);
    await pipeline.run(['a third']);
    const stats = pipeline.statistics;
    expect(stats).toMatchObject({
      batches: 2,
      inputs: 3,
      tokenize: { calls: 2 },
      inference: { calls: 2 },
    });
    expect(stats?.inference.ms).toBeGreaterThan(0);
    // A copy: reading it does not hand out the live counters.
    if (stats !== undefined) stats.batches = 99;
    expect(pipeline.statistics?.batches).toBe(2);
  });

  it('refuses an empty batch before running anything', async () => {
    const pipeline = hugot.pipeline('classify');
    const before = pipeline.statistics?.inference.calls;
    await expect(pipeline.run([])).rejects.toBeInstanceOf(InputError);
    expect(pipeline.statistics?.inference.calls).toBe(before);
  });

  it('names the field of an unknown option', async () => {
    const h = createHugot();
    h.registerModel('bert', { path: join(FIXTURES, 'bert-text-classification') });
    const failure = h.registerPipeline('c', {
      task: 'textClassification',
      model: 'bert',
      options: { topk: 2 },
    });
    await expect(failure).rejects.toBeInstanceOf(ConfigError);
    await expect(failure).rejects.toThrow(/options\.topk.*topK/);
    await h.close();
  });

  it('turns an ONNX Runtime failure into an InferenceError naming the task, and still counts it', async () => {
    const model = await store.load({ path: join(FIXTURES, 'bert-text-classification') });
    const pipeline = new WrongFeeds(model);
    const failure = pipeline.run(['x']);
    await expect(failure).rejects.toBeInstanceOf(InferenceError);
    await expect(failure).rejects.toThrow(/^wrongFeeds: ONNX Runtime failed/);
    expect(pipeline.statistics).toMatchObject({ batches: 0, inference: { calls: 1 } });
  });
});
