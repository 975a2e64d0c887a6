// Pricing by characters needs only the length a model reads, so the main thread builds no Rust
// tokenizer for it; that length must be the one a full load reports, for every fixture model.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inputCost } from '../../../src/engine/input-cost.ts';
import { canEncode, loadPricingTokenizer } from '../../../src/engine/pricing-tokenizer.ts';
import { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';

const MODELS = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const folders = readdirSync(MODELS).map((name) => join(MODELS, name));
const withTokenizer = folders.filter((f) => existsSync(join(f, 'tokenizer.json')));
const without = folders.filter((f) => !existsSync(join(f, 'tokenizer.json')));

describe('loadPricingTokenizer', () => {
  it('has fixture models with and without a tokenizer to check', () => {
    expect(withTokenizer.length).toBeGreaterThan(10);
    expect(without.length).toBeGreaterThan(0);
  });

  it.each(withTokenizer)('by characters, reads the limit a full load has: %s', async (folder) => {
    const limit = await loadPricingTokenizer(folder, 'characters');
    const full = await loadPricingTokenizer(folder, 'tokens');
    expect(limit).toBeDefined();
    expect(full).toBeInstanceOf(TextTokenizer);
    expect(canEncode(limit!)).toBe(false);
    expect(limit!.maxLength).toBe(full!.maxLength);
  });

  it('is undefined for a folder without tokenizer.json, either way', async () => {
    for (const folder of without) {
      expect(await loadPricingTokenizer(folder, 'characters')).toBeUndefined();
      expect(await loadPricingTokenizer(folder, 'tokens')).toBeUndefined();
    }
  });

  it('prices by characters from the limit alone, capped at it', async () => {
    const folder = join(MODELS, 'bert-feature-extraction');
    const tokenizer = await loadPricingTokenizer(folder, 'characters');
    const context = {
      task: 'featureExtraction',
      tokenizer,
      options: {},
      pricing: 'characters' as const,
    };
    expect(await inputCost('a'.repeat(40), context)).toEqual({ tokens: 12, rows: 1 });
    expect(await inputCost('a'.repeat(4000), context)).toEqual({ tokens: 64, rows: 1 });
  });
});
