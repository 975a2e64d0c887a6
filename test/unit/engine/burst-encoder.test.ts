import { describe, expect, it } from 'vitest';
import { BURST_TEXTS, BurstEncoder, type CarryEncoder } from '../../../src/engine/burst-encoder.ts';
import type { CarriedEncoding } from '../../../src/pipelines/runtime/carried-encoding.ts';

/** A tokenizer that records its calls: each text's ids are its length, once per character. */
function recording(
  refuse?: string,
): CarryEncoder & { calls: { texts: string[]; maxLength: number }[] } {
  const calls: { texts: string[]; maxLength: number }[] = [];
  return {
    calls,
    encodeToCarry(texts: readonly string[], maxLength: number): Promise<CarriedEncoding[]> {
      calls.push({ texts: [...texts], maxLength });
      if (refuse !== undefined && texts.includes(refuse))
        return Promise.reject(new Error(`cannot encode '${refuse}'`));
      return Promise.resolve(
        texts.map((text) => ({ text, maxLength, ids: Array.from(text, (c) => c.charCodeAt(0)) })),
      );
    },
  };
}

describe('burst encoder', () => {
  it('encodes what is asked in one turn in one call per length, cut at BURST_TEXTS', async () => {
    const tokenizer = recording();
    const encoder = new BurstEncoder(tokenizer);
    const long = Array.from({ length: BURST_TEXTS * 2 + 5 }, (_, i) => `text ${i}`);
    const results = await Promise.all([
      ...long.map((text) => encoder.encode(text, 128)),
      encoder.encode('short', 16),
    ]);
    expect(tokenizer.calls.map((c) => [c.texts.length, c.maxLength])).toEqual([
      [BURST_TEXTS, 128],
      [BURST_TEXTS, 128],
      [5, 128],
      [1, 16],
    ]);
    expect(results.map((r) => r.text)).toEqual([...long, 'short']);
    expect(results.at(-1)).toMatchObject({ maxLength: 16, ids: [115, 104, 111, 114, 116] });
    // A later turn makes a call of its own.
    await encoder.encode('later', 128);
    expect(tokenizer.calls).toHaveLength(5);
  });

  it('fails only the text the tokenizer refuses, not the others of its call', async () => {
    const tokenizer = recording('bad');
    const encoder = new BurstEncoder(tokenizer);
    const settled = await Promise.allSettled(
      ['one', 'bad', 'three'].map((text) => encoder.encode(text, 8)),
    );
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((settled[1] as PromiseRejectedResult).reason).toBeInstanceOf(Error);
    expect((settled[2] as PromiseFulfilledResult<CarriedEncoding>).value.text).toBe('three');
    // The whole call, then each text alone.
    expect(tokenizer.calls.map((c) => c.texts)).toEqual([
      ['one', 'bad', 'three'],
      ['one'],
      ['bad'],
      ['three'],
    ]);
  });
});
