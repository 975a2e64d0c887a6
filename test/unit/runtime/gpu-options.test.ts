// The GPU options: cuda shards and their thread default, the batcher's defaults by device,
// 'characters' pricing that never touches the main-thread tokenizer, the generative engine's device,
// the refusal to start a CUDA session when the provider library was not installed, and where the
// device paths (pooling, the decode cache, prefills) run by default.
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { compileBatcherOptions } from '../../../src/batching/batcher-options.ts';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { BatchEngine } from '../../../src/engine/batch-engine.ts';
import { estimateTokens, inputCost } from '../../../src/engine/input-cost.ts';
import { ConfigError, ProviderUnavailableError } from '../../../src/errors.ts';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import type { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';
import {
  compileRuntimeOptions,
  kvOnDevice,
  poolsOnDevice,
  prefillsOnDevice,
} from '../../../src/runtime/runtime-options.ts';
import {
  compileShard,
  DEFAULT_CUDA_THREADS,
  defaultCudaThreads,
} from '../../../src/shards/shard-spec.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');

// Where onnxruntime-node keeps its native libraries; `npm run gpu:install` adds the CUDA provider
// there. Without it every CUDA session must be refused before ONNX Runtime tries to load it.
const ORT_BIN = join(
  dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json')),
  'bin',
  'napi-v6',
  process.platform,
  process.arch,
);
const cudaInstalled = existsSync(join(ORT_BIN, 'libonnxruntime_providers_cuda.so'));

function configError(run: () => unknown): ConfigError {
  return thrownBy(ConfigError, run);
}

describe('cuda shards', () => {
  it("compiles 'cuda:<id>' to DEFAULT_CUDA_THREADS threads of one intra-op thread on that GPU", () => {
    expect(DEFAULT_CUDA_THREADS).toBe(8);
    expect(compileShard('cuda:1', 'shard', 16)).toEqual({
      name: 'cuda:1',
      threads: DEFAULT_CUDA_THREADS,
      intraOpThreads: 1,
      runsPerThread: 1,
      executionProviders: [{ name: 'cuda', deviceId: 1 }],
    });
  });

  it('takes the thread count of the object form', () => {
    expect(compileShard({ device: 'cuda', deviceId: 0, threads: 3 })).toEqual({
      name: 'cuda:0',
      threads: 3,
      intraOpThreads: 1,
      runsPerThread: 1,
      executionProviders: [{ name: 'cuda', deviceId: 0 }],
    });
    expect(compileShard({ device: 'cuda', deviceId: 2 }, 'shard', 16).threads).toBe(
      DEFAULT_CUDA_THREADS,
    );
  });

  it('sizes the default thread count to the cores, never below two', () => {
    expect(defaultCudaThreads(1)).toBe(2);
    expect(defaultCudaThreads(4)).toBe(4);
    expect(defaultCudaThreads(64)).toBe(DEFAULT_CUDA_THREADS);
    expect(compileShard('cuda:0', 'shard', 2).threads).toBe(2);
  });

  it('names the field it refuses', () => {
    const zero = configError(() =>
      compileShard({ device: 'cuda', deviceId: 0, threads: 0 }, 'shards[0]'),
    );
    expect(zero.field).toBe('shards[0].threads');
    expect(zero.message).toMatch(/shards\[0\]\.threads/);
    const unknown = configError(() =>
      compileShard({ device: 'cuda', deviceId: 0, thread: 2 } as never, 'shards[0]'),
    );
    expect(unknown.field).toBe('shards[0].thread');
    expect(unknown.message).toMatch(/shards\[0\]\.thread: unknown key; did you mean 'threads'\?/);
    expect(configError(() => compileShard('gpu', 'shards[1]')).field).toBe('shards[1]');
  });
});

describe('batcher defaults by device', () => {
  it('cuts narrow batches on CPU priced by tokens and wide ones on GPU priced by characters', () => {
    expect(compileBatcherOptions({}, 'b', 'cpu')).toMatchObject({
      maxBatchSize: 32,
      maxBatchTokens: 256,
      pricing: 'tokens',
    });
    expect(compileBatcherOptions({}, 'b', 'gpu')).toMatchObject({
      maxBatchSize: 256,
      maxBatchTokens: 8192,
      pricing: 'characters',
    });
  });

  it('keeps configured values on either device', () => {
    for (const device of ['cpu', 'gpu'] as const) {
      expect(
        compileBatcherOptions(
          {
            maxBatchSize: 7,
            maxBatchTokens: 999,
            pricing: 'tokens',
          },
          'b',
          device,
        ),
      ).toMatchObject({
        maxBatchSize: 7,
        maxBatchTokens: 999,
        pricing: 'tokens',
      });
    }
  });

  it('names a pricing it does not know', () => {
    const err = configError(() =>
      compileBatcherOptions({ pricing: 'words' } as never, 'pipelines.x.batching', 'gpu'),
    );
    expect(err.field).toBe('pipelines.x.batching.pricing');
    expect(err.message).toMatch(/pipelines\.x\.batching\.pricing/);
  });
});

describe('input cost', () => {
  it('estimates a quarter token per character plus the special tokens', () => {
    expect(estimateTokens('')).toBe(2);
    expect(estimateTokens('abcd')).toBe(3);
    expect(estimateTokens('abcde')).toBe(4);
    expect(estimateTokens('abcd', 'efgh')).toBe(5);
    expect(estimateTokens('abcd', '')).toBe(4);
  });

  it("prices by characters without calling the tokenizer, capped at the model's length", async () => {
    const encode = vi.fn(() => {
      throw new Error('characters pricing must not tokenize');
    });
    const tokenizer = { maxLength: 16, encode } as unknown as TextTokenizer;
    const context = {
      task: 'textClassification',
      tokenizer,
      options: {},
      pricing: 'characters',
    } as const;
    expect(await inputCost('a'.repeat(40), context)).toEqual({ tokens: 12, rows: 1 });
    expect(await inputCost('a'.repeat(400), context)).toEqual({ tokens: 16, rows: 1 });
    expect(await inputCost({ text: 'a'.repeat(20), textPair: 'b'.repeat(20) }, context)).toEqual({
      tokens: 13,
      rows: 1,
    });
    // featureExtraction's own truncation is lower than the tokenizer's.
    expect(
      await inputCost('a'.repeat(40), {
        ...context,
        task: 'featureExtraction',
        options: { maxLength: 8 },
      }),
    ).toEqual({ tokens: 8, rows: 1 });
    expect(encode).not.toHaveBeenCalled();
  });

  it('prices by tokens with the tokenizer, untruncated, then capped', async () => {
    const encode = vi.fn(() => Promise.resolve([{ ids: [1, 2, 3, 4, 5] }]));
    const tokenizer = { maxLength: 4, encode } as unknown as TextTokenizer;
    const context = {
      task: 'textClassification',
      tokenizer,
      options: {},
      pricing: 'tokens',
    } as const;
    expect(await inputCost('a'.repeat(400), context)).toEqual({ tokens: 4, rows: 1 });
    expect(
      await inputCost('hi', { ...context, tokenizer: { ...tokenizer, maxLength: 64 } }),
    ).toEqual({ tokens: 5, rows: 1 });
    expect(encode).toHaveBeenCalledTimes(2);
    expect(encode).toHaveBeenCalledWith(['a'.repeat(400)], { truncation: false });
  });
});

describe('CUDA without the provider library', () => {
  // On a machine where `npm run gpu:install` was run these would start real CUDA sessions.
  it.skipIf(cudaInstalled)(
    'BatchEngine.start refuses a cuda shard and says how to install the provider',
    async () => {
      expect(existsSync(ORT_BIN)).toBe(true);
      expect(cudaInstalled).toBe(false);
      const started = BatchEngine.start({
        models: { cls: { path: join(FIXTURES, 'bert-text-classification') } },
        pipelines: { classify: { task: 'textClassification', model: 'cls' } },
        shards: ['cuda:0'],
      });
      await expect(started).rejects.toBeInstanceOf(ProviderUnavailableError);
      await expect(started).rejects.toThrow(/npm run gpu:install/);
    },
    60_000,
  );

  // Skipped: GenerativeEngine.start never settles when a thread fails to load (a missing model
  // folder hangs the same way). The worker posts 'fatal' and stays alive, and the abort() in
  // start's catch waits for a 'drained' that the worker only sends once a loop exists.
  it.skipIf(cudaInstalled)(
    "GenerativeEngine.start refuses device 'cuda:0' the same way",
    async () => {
      const started = GenerativeEngine.start({
        model: { path: join(FIXTURES, 'llama-causal-lm') },
        device: 'cuda:0',
      });
      await expect(started).rejects.toBeInstanceOf(ProviderUnavailableError);
      await expect(started).rejects.toThrow(/npm run gpu:install/);
    },
    20_000,
  );
});

describe('generative device option', () => {
  it("refuses a device that is neither 'cpu' nor 'cuda:<id>', naming generative.device", async () => {
    const started = GenerativeEngine.start({
      model: { path: join(FIXTURES, 'llama-causal-lm') },
      device: 'gpu',
    });
    await expect(started).rejects.toBeInstanceOf(ConfigError);
    await expect(started).rejects.toMatchObject({ field: 'generative.device' });
  });

  const config = (generative: string): string => `
models:
  lm: { path: models/lm }
pipelines:
  write: { task: textGeneration, model: lm, generative: ${generative} }
routes:
  - source: { type: kafka, topic: prompts, groupId: g }
    pipeline: write
    input: { field: prompt }
    sink: { type: kafka, topic: completions }
connections: { kafka: { brokers: [b:9092] } }
`;

  it("accepts a worker config's cuda device, quoted or not", () => {
    for (const generative of ["{ device: 'cuda:0' }", '{ device: cuda:1, threads: 2 }']) {
      const device = generative.includes('cuda:1') ? 'cuda:1' : 'cuda:0';
      expect(parseConfigText(config(generative), {}).pipelines['write']?.generative).toMatchObject({
        device,
      });
    }
  });

  it("names the field of a worker config's unknown device", () => {
    const err = configError(() => parseConfigText(config('{ device: tpu }'), {}));
    expect(err.field).toBe('pipelines.write.generative.device');
    expect(err.message).toMatch(/cuda:<device id>/);
  });
});

describe('where device paths run by default', () => {
  const cuda = { executionProviders: [{ name: 'cuda' as const, deviceId: 0 }] };
  const on = (options: Parameters<typeof compileRuntimeOptions>[0]) => {
    const compiled = compileRuntimeOptions(options);
    return {
      pooling: poolsOnDevice(compiled),
      kv: kvOnDevice(compiled),
      prefills: prefillsOnDevice(compiled),
    };
  };

  it('auto: everything on a native GPU session; on CPU the decode cache only', () => {
    expect(on({ binding: 'native', ...cuda })).toEqual({ pooling: true, kv: true, prefills: true });
    expect(on({ binding: 'native' })).toEqual({ pooling: false, kv: true, prefills: false });
  });

  it("'device' named on CPU takes the device path everywhere it is asked for (the CPU twins)", () => {
    expect(on({ binding: 'native', poolingOn: 'device', kvOn: 'device' })).toEqual({
      pooling: true,
      kv: true,
      prefills: true,
    });
  });

  it("'host', and onnxruntime-node's sessions, keep the cache on the host", () => {
    expect(on({ binding: 'native', ...cuda, kvOn: 'host' })).toMatchObject({
      kv: false,
      prefills: false,
    });
    expect(on({ binding: 'onnxruntime-node', ...cuda })).toEqual({
      pooling: false,
      kv: false,
      prefills: false,
    });
  });
});
