import { describe, expect, it } from 'vitest';
import {
  compileBatcherOptions,
  DEFAULT_BATCH_TOKENS,
  DEFAULT_MESSAGE_TOKENS,
} from '../../../src/batching/batcher-options.ts';
import { ConfigError } from '../../../src/errors.ts';

describe('batcher options', () => {
  it('sizes the default token budget by the device the queue feeds', () => {
    expect(compileBatcherOptions({}, 'batching', 'cpu').maxBatchTokens).toBe(
      DEFAULT_BATCH_TOKENS.cpu,
    );
    expect(compileBatcherOptions({}, 'batching', 'gpu').maxBatchTokens).toBe(
      DEFAULT_BATCH_TOKENS.gpu,
    );
    expect(DEFAULT_BATCH_TOKENS.cpu).toBeLessThan(DEFAULT_BATCH_TOKENS.gpu);
  });

  it('keeps a configured budget on either device', () => {
    for (const device of ['cpu', 'gpu'] as const)
      expect(
        compileBatcherOptions({ maxBatchTokens: 2048 }, 'batching', device).maxBatchTokens,
      ).toBe(2048);
  });

  it("sizes a message's room by device unless configured; 0 sends each batch alone", () => {
    expect(compileBatcherOptions({}, 'batching', 'cpu').maxMessageTokens).toBe(
      DEFAULT_MESSAGE_TOKENS.cpu,
    );
    expect(compileBatcherOptions({}, 'batching', 'gpu').maxMessageTokens).toBe(0);
    // Room for more than one batch at the CPU's own budget, or no message would carry two.
    expect(DEFAULT_MESSAGE_TOKENS.cpu).toBeGreaterThan(DEFAULT_BATCH_TOKENS.cpu);
    expect(compileBatcherOptions({ maxMessageTokens: 0 }).maxMessageTokens).toBe(0);
    expect(() => compileBatcherOptions({ maxMessageTokens: -1 }, 'pipelines.x.batching')).toThrow(
      /pipelines\.x\.batching\.maxMessageTokens/,
    );
  });

  it('names the field it refuses', () => {
    expect(() => compileBatcherOptions({ maxBatchTokens: 0 }, 'pipelines.x.batching')).toThrow(
      ConfigError,
    );
    expect(() => compileBatcherOptions({ maxBatchTokens: 0 }, 'pipelines.x.batching')).toThrow(
      /pipelines\.x\.batching\.maxBatchTokens/,
    );
  });
});
