// The token bans of Python's logits processors (no_repeat_ngram_size, encoder_no_repeat_ngram_size,
// bad_words_ids, suppress_tokens, begin_suppress_tokens) and where GenerationProgress applies them
// among the forced tokens and minimum lengths.
import { describe, expect, it } from 'vitest';
import type { GenerationSettings } from '../../../src/pipelines/generation/generation-options.ts';
import { GenerationProgress } from '../../../src/pipelines/generation/generation-progress.ts';
import {
  banEncoderNgrams,
  banRepeatedNgrams,
} from '../../../src/pipelines/generation/no-repeat-ngram.ts';
import {
  banBeforeForcing,
  NO_BANS,
  suppressTokens,
  type TokenBans,
} from '../../../src/pipelines/generation/token-bans.ts';

const VOCAB = 8;

function banned(apply: (scores: Float32Array) => void): number[] {
  const scores = new Float32Array(VOCAB);
  apply(scores);
  return [...scores.keys()].filter((i) => scores[i] === -Infinity);
}

describe('banRepeatedNgrams (Python NoRepeatNGramLogitsProcessor)', () => {
  it('bans the token that would complete an n-gram already seen', () => {
    // Bigrams (1,2), (2,3), (3,1): the tail 1 was followed by 2 before.
    expect(banned((s) => banRepeatedNgrams(s, [1, 2, 3, 1], 2))).toEqual([2]);
    // Trigram (1,2,3) seen; the tail (1,2) would repeat it with 3.
    expect(banned((s) => banRepeatedNgrams(s, [1, 2, 3, 4, 1, 2], 3))).toEqual([3]);
    // Every continuation of the tail is banned, and only those.
    expect(banned((s) => banRepeatedNgrams(s, [5, 1, 5, 2, 5, 3, 5], 2))).toEqual([1, 2, 3]);
  });

  it('bans nothing before a whole n-gram has been seen, or when off', () => {
    expect(banned((s) => banRepeatedNgrams(s, [1, 1], 3))).toEqual([]);
    expect(banned((s) => banRepeatedNgrams(s, [1, 2, 1], 0))).toEqual([]);
  });

  it("does not ban the tail's own successor: the window starting at the tail is incomplete", () => {
    // (4,4) is not yet a bigram ending the sequence [4]; with [4,4] it is, so 4 is banned.
    expect(banned((s) => banRepeatedNgrams(s, [4], 2))).toEqual([]);
    expect(banned((s) => banRepeatedNgrams(s, [4, 4], 2))).toEqual([4]);
  });

  it('size 1 bans every token seen', () => {
    expect(banned((s) => banRepeatedNgrams(s, [3, 1, 3], 1))).toEqual([1, 3]);
  });

  it('ignores ids beyond the scores', () => {
    expect(banned((s) => banRepeatedNgrams(s, [1, 99, 1], 2))).toEqual([]);
  });
});

describe('banEncoderNgrams (Python EncoderNoRepeatNGramLogitsProcessor)', () => {
  it("bans the token that would copy an n-gram of the encoder's input", () => {
    expect(banned((s) => banEncoderNgrams(s, [1, 2, 3, 1, 4], [0, 1], 2))).toEqual([2, 4]);
    expect(banned((s) => banEncoderNgrams(s, [1, 2, 3], [0], 3))).toEqual([]);
  });
});

describe('bad words and suppressed tokens', () => {
  const bans: TokenBans = {
    ...NO_BANS,
    badWordsIds: [[5], [2, 3], [1, 2, 4]],
    suppressTokens: [6],
    beginSuppressTokens: [7],
    beginSuppressAt: 1,
  };

  it('bans a one-token word always, a longer one when the tokens seen end in its prefix', () => {
    expect(banned((s) => banBeforeForcing(s, [0, 1], bans))).toEqual([5]);
    expect(banned((s) => banBeforeForcing(s, [0, 2], bans))).toEqual([3, 5]);
    expect(banned((s) => banBeforeForcing(s, [1, 2], bans))).toEqual([3, 4, 5]);
  });

  it('suppresses tokens always and the begin tokens at their index only', () => {
    expect(banned((s) => suppressTokens(s, 0, bans))).toEqual([6]);
    expect(banned((s) => suppressTokens(s, 1, bans))).toEqual([6, 7]);
    expect(banned((s) => suppressTokens(s, 2, bans))).toEqual([6]);
  });
});

function settings(overrides: Partial<GenerationSettings>): GenerationSettings {
  return {
    maxNewTokens: 10,
    minNewTokens: 0,
    sampling: { doSample: false, temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1 },
    seed: 1,
    stopSequences: [],
    systemPrompt: undefined,
    eosTokenIds: new Set([1]),
    responseFormat: undefined,
    format: undefined,
    ...overrides,
  };
}

/** Logits whose best token is `best`, then `second`, the rest 0. */
function logits(best: number, second: number): Float32Array {
  const scores = new Float32Array(VOCAB);
  scores[best] = 5;
  scores[second] = 3;
  return scores;
}

describe('GenerationProgress applies the bans in Python order', () => {
  const decode = (ids: readonly number[]): Promise<string> => Promise.resolve(ids.join(' '));

  it('bans n-grams over the prompt and the output', async () => {
    const progress = new GenerationProgress(
      [3, 4, 3],
      settings({ bans: { ...NO_BANS, noRepeatNgramSize: 2 } }),
    );
    // The prompt's (3, 4) rules out 4 after 3.
    expect(progress.choose(logits(4, 2))).toBe(2);
    await progress.accept(2, decode);
    expect(progress.choose(logits(4, 2))).toBe(4);
  });

  it('a forced token overrules the bans before it, not the suppressed tokens after it', () => {
    const bans = { ...NO_BANS, badWordsIds: [[6]] };
    const forcedBanned = new GenerationProgress([0], settings({ bans, forcedBosTokenId: 6 }));
    expect(forcedBanned.choose(logits(2, 3))).toBe(6);
    const suppressed = new GenerationProgress(
      [0],
      settings({ bans: { ...NO_BANS, suppressTokens: [6] }, forcedBosTokenId: 6 }),
    );
    const scores = logits(2, 3);
    suppressed.choose(scores);
    expect([...scores].every((s) => s === -Infinity)).toBe(true);
  });

  it('begin_suppress_tokens apply to the token after a forced BOS', async () => {
    const bans = { ...NO_BANS, beginSuppressTokens: [4], beginSuppressAt: 1 };
    const progress = new GenerationProgress([0], settings({ bans, forcedBosTokenId: 6 }));
    await progress.accept(progress.choose(logits(4, 2)), decode);
    expect(progress.choose(logits(4, 2))).toBe(2);
    await progress.accept(2, decode);
    expect(progress.choose(logits(4, 2))).toBe(4);
  });

  it('min_length counts the prompt (a decoder-only model), min_new_tokens does not', async () => {
    const progress = new GenerationProgress([2, 3], settings({ minLength: 4 }));
    expect(progress.choose(logits(1, 5))).toBe(5);
    await progress.accept(5, decode);
    expect(progress.choose(logits(1, 5))).toBe(5);
    await progress.accept(5, decode);
    expect(progress.choose(logits(1, 5))).toBe(1);
  });

  it('forces EOS as the last token allowed', async () => {
    const progress = new GenerationProgress(
      [2],
      settings({ maxNewTokens: 2, forcedEosTokenId: 1 }),
    );
    await progress.accept(progress.choose(logits(3, 4)), decode);
    expect(progress.choose(logits(3, 4))).toBe(1);
  });
});
