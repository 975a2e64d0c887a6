// What the main thread holds of a model's tokenizer to price inputs before they are queued. By
// tokens it needs the tokenizer itself; by characters (the default on every device) only the
// length the model reads, so the main thread builds no Rust tokenizer of its own: ~8 MiB per
// model on MiniLM (docs/performance.md#the-main-threads-tokenizer-and-the-heap-after-runs).
import { readdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { readModelConfig } from '../pipelines/runtime/model-config.ts';
import { TextTokenizer } from '../pipelines/runtime/text-tokenizer.ts';

/** A model's tokenizer as pricing by characters sees it: its limit, nothing to encode with. */
export interface TokenizerLimit {
  readonly maxLength: number | undefined;
}

export type PricingTokenizer = TextTokenizer | TokenizerLimit;

/** Structural, so that tests may price with a fake tokenizer. */
export function canEncode(tokenizer: PricingTokenizer): tokenizer is TextTokenizer {
  return typeof (tokenizer as Partial<TextTokenizer>).encode === 'function';
}

/** undefined for a folder without tokenizer.json (its inputs cost one unit each). */
export async function loadPricingTokenizer(
  path: string,
  pricing: 'tokens' | 'characters',
): Promise<PricingTokenizer | undefined> {
  const folder = resolve(path);
  const files = await readdir(folder).catch(() => [] as string[]);
  if (!files.includes('tokenizer.json')) return undefined;
  const config = await readModelConfig(folder);
  if (pricing === 'tokens') return TextTokenizer.load(folder, config.maxPositionEmbeddings);
  return { maxLength: await TextTokenizer.readMaxLength(folder, config.maxPositionEmbeddings) };
}
