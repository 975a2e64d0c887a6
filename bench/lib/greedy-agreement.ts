// How closely a quantized export's greedy output follows float32's: on the same prompts, the
// tokens each chose. Once two greedy runs pick different tokens their continuations drift apart
// for good, so the measure that means something is the common prefix; positional matches after
// a divergence are mostly chance and are not counted.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type {
  ChatMessage,
  TextGenerationPipeline,
} from '../../src/pipelines/generation/text-generation.ts';

const GREEDY_KEYS = new Set(['max_new_tokens', 'do_sample']);

export interface GreedyCase {
  name: string;
  prompt: string | ChatMessage[];
  /** float32's greedy new tokens. */
  reference: readonly number[];
}

export interface Agreement {
  prompts: number;
  /** Prompts whose every new token equals float32's. */
  identical: number;
  /** Tokens before the first divergence, over every prompt, as a fraction of float32's tokens. */
  prefixAgreement: number;
  /** The same over the first `firstTokens` tokens of each prompt only. */
  firstAgreement: number;
  firstTokens: number;
}

/**
 * The committed prompts of a model's goldens (goldens.json, written by the fixture scripts from
 * test/fixtures/corpus/sample.jsonl) with Python's float32 greedy tokens, which our float32 path
 * reproduces exactly (test/parity/smollm2-generation.test.ts). Empty without the file.
 */
export function goldenCases(folder: string): { cases: GreedyCase[]; maxNewTokens: number } {
  const file = join(folder, 'goldens.json');
  if (!existsSync(file)) return { cases: [], maxNewTokens: 0 };
  const goldens = JSON.parse(readFileSync(file, 'utf8')) as {
    generation?: {
      name: string;
      call: {
        prompt: string | ChatMessage[];
        options: { max_new_tokens: number; do_sample?: boolean };
      };
      new_ids: number[];
    }[];
  };
  // Plain greedy cases only: the kit's goldens also hold sampled and penalised ones.
  const generation = (goldens.generation ?? []).filter(
    (g) =>
      Object.keys(g.call.options).every((k) => GREEDY_KEYS.has(k)) &&
      g.call.options.do_sample !== true &&
      (typeof g.call.prompt === 'string' ||
        (Array.isArray(g.call.prompt) && g.call.prompt.every((m) => typeof m?.role === 'string'))),
  );
  return {
    cases: generation.map((g) => ({ name: g.name, prompt: g.call.prompt, reference: g.new_ids })),
    maxNewTokens: Math.max(0, ...generation.map((g) => g.call.options.max_new_tokens)),
  };
}

/** Greedy generation of every case on `pipeline`, compared with the case's float32 tokens. */
export async function greedyAgreement(
  pipeline: TextGenerationPipeline,
  cases: readonly GreedyCase[],
  maxNewTokens: number,
  firstTokens = 16,
): Promise<Agreement> {
  let identical = 0;
  let agreed = 0;
  let total = 0;
  let firstAgreed = 0;
  let firstTotal = 0;
  for (const c of cases) {
    const { tokenIds } = await pipeline.generate(c.prompt, { maxNewTokens, doSample: false });
    const common = commonPrefix(tokenIds, c.reference);
    if (common === c.reference.length && tokenIds.length === c.reference.length) identical += 1;
    agreed += common;
    total += c.reference.length;
    const first = Math.min(firstTokens, c.reference.length);
    firstAgreed += Math.min(common, first);
    firstTotal += first;
  }
  return {
    prompts: cases.length,
    identical,
    prefixAgreement: total === 0 ? NaN : agreed / total,
    firstAgreement: firstTotal === 0 ? NaN : firstAgreed / firstTotal,
    firstTokens,
  };
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i += 1;
  return i;
}
