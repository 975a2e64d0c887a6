// The encoder–decoder loops over a scripted decoder: what each step is fed, when a row ends, the
// forced tokens, and that a finished row leaves the batch.
import { describe, expect, it } from 'vitest';
import { beamSearch } from '../../../src/pipelines/seq2seq/beam-search.ts';
import type { DecoderStepper } from '../../../src/pipelines/seq2seq/decoder-stepper.ts';
import { NO_BANS } from '../../../src/pipelines/generation/token-bans.ts';
import { greedySearch } from '../../../src/pipelines/seq2seq/greedy-search.ts';
import type { Seq2SeqSettings } from '../../../src/pipelines/seq2seq/seq2seq-settings.ts';

const VOCAB = 8;
const START = 0;
const EOS = 1;

/** Each row prefers `plan[row][step]` (a clear winner); rows are tracked through `select`. */
class ScriptedDecoder implements DecoderStepper {
  readonly fed: number[][] = [];
  readonly selections: number[][] = [];
  private readonly plan: readonly (readonly number[])[];
  private ids: number[];
  private steps = 0;

  constructor(plan: readonly (readonly number[])[]) {
    this.plan = plan;
    this.ids = plan.map((_, i) => i);
  }

  get rows(): number {
    return this.ids.length;
  }

  step(tokens: readonly number[]): Promise<Float32Array[]> {
    this.fed.push([...tokens]);
    const step = this.steps;
    this.steps += 1;
    return Promise.resolve(
      this.ids.map((id) => {
        const logits = new Float32Array(VOCAB).fill(0);
        logits[this.plan[id]?.[step] ?? 2] = 5;
        return logits;
      }),
    );
  }

  select(rows: readonly number[]): void {
    this.selections.push([...rows]);
    this.ids = rows.map((r) => this.ids[r] as number);
  }
}

function settings(overrides: Partial<Seq2SeqSettings> = {}): Seq2SeqSettings {
  return {
    decoderStartTokenId: START,
    eosTokenIds: new Set([EOS]),
    forcedBosTokenId: undefined,
    forcedEosTokenId: undefined,
    maxNewTokens: 6,
    minNewTokens: 0,
    sampling: { doSample: false, temperature: 1, topK: 50, topP: 1, repetitionPenalty: 1 },
    seed: undefined,
    stopSequences: [],
    numBeams: 1,
    lengthPenalty: 1,
    earlyStopping: false,
    ...overrides,
  };
}

/** Letters for ids, the special EOS left out as the pipelines' decode leaves it out. */
const decode = (ids: readonly number[]): Promise<string> =>
  Promise.resolve(
    ids
      .filter((id) => id !== EOS)
      .map((id) => String.fromCharCode(96 + id))
      .join(''),
  );

describe('greedySearch', () => {
  it('feeds the decoder start token first, stops a row at EOS and drops it from the batch', async () => {
    const decoder = new ScriptedDecoder([
      [3, 4, EOS],
      [5, 5, 5, 5, 5, 5, 5],
    ]);
    const results = await greedySearch(decoder, settings(), decode);
    expect(decoder.fed[0]).toEqual([START, START]);
    expect(decoder.fed[1]).toEqual([3, 5]);
    expect(results[0]).toMatchObject({ tokenIds: [3, 4, EOS], finishReason: 'eos', text: 'cd' });
    expect(results[1]).toMatchObject({ tokenIds: [5, 5, 5, 5, 5, 5], finishReason: 'length' });
    // After the first row's EOS only the second row is run.
    expect(decoder.selections).toEqual([[1]]);
    expect(decoder.fed.slice(3).every((tokens) => tokens.length === 1)).toBe(true);
  });

  it('stops at maxNewTokens', async () => {
    const decoder = new ScriptedDecoder([[2, 2, 2, 2, 2, 2, 2, 2]]);
    const [result] = await greedySearch(decoder, settings({ maxNewTokens: 3 }), decode);
    expect(result).toMatchObject({ tokenIds: [2, 2, 2], finishReason: 'length' });
    expect(decoder.fed).toHaveLength(3);
  });

  it('forces BOS first and EOS at the length limit, as Python does', async () => {
    const decoder = new ScriptedDecoder([[4, 4, 4, 4, 4]]);
    const [result] = await greedySearch(
      decoder,
      settings({ maxNewTokens: 4, forcedBosTokenId: 6, forcedEosTokenId: EOS }),
      decode,
    );
    expect(result?.tokenIds).toEqual([6, 4, 4, EOS]);
  });

  it('bans n-grams over the decoder input, start token included', async () => {
    const decoder = new ScriptedDecoder([[3, 4, 3, 4, 3, 4]]);
    const bans = { ...NO_BANS, noRepeatNgramSize: 2 };
    const [result] = await greedySearch(decoder, settings({ bans }), decode);
    // After the second 3, 4 would repeat (3, 4): the runner-up 0 (the first zero) wins. After
    // that 0, 3 would repeat the start token's (0, 3): 0 again. Then 4 is free.
    expect(result?.tokenIds).toEqual([3, 4, 3, 0, 0, 4]);
  });

  it('suppresses begin tokens at the token after a forced BOS', async () => {
    const decoder = new ScriptedDecoder([[2, 5, 5]]);
    const bans = { ...NO_BANS, beginSuppressTokens: [5], beginSuppressAt: 1 };
    const [result] = await greedySearch(
      decoder,
      settings({ maxNewTokens: 3, forcedBosTokenId: 6, bans }),
      decode,
    );
    expect(result?.tokenIds).toEqual([6, 0, 5]);
  });

  it('keeps EOS out until minNewTokens', async () => {
    const decoder = new ScriptedDecoder([[EOS, EOS, 3, EOS]]);
    const [result] = await greedySearch(decoder, settings({ minNewTokens: 2 }), decode);
    // EOS is masked for two steps, so the runner-up (token 0, the first of the zeros) wins.
    expect(result?.tokenIds).toEqual([0, 0, 3, EOS]);
  });
});

describe('beamSearch', () => {
  it('expands each input to numBeams rows and returns the best finished hypothesis', async () => {
    const decoder = new ScriptedDecoder([[3, 4, EOS]]);
    const [best] = await beamSearch(decoder, settings({ numBeams: 2 }));
    expect(decoder.selections[0]).toEqual([0, 0]);
    expect(decoder.fed[0]).toEqual([START, START]);
    expect(best).toEqual([3, 4, EOS]);
  });

  it('applies the bad words and suppressed tokens to every beam', async () => {
    const decoder = new ScriptedDecoder([[3, 4, EOS]]);
    const bans = { ...NO_BANS, badWordsIds: [[3]], suppressTokens: [0, 2] };
    const [best] = await beamSearch(decoder, settings({ numBeams: 2, maxNewTokens: 3, bans }));
    expect(best).not.toContain(3);
    expect(best).not.toContain(0);
    expect(best).not.toContain(2);
  });
});
