// Scratch outputs: an array handed out is never handed out again until it is given back, a
// given-back buffer serves the next run that fits, and a run's values are the same read into
// scratch as into an array of its own, on the calling thread and on libuv's pool.
import { describe, expect, it } from 'vitest';
import { OutputScratch, outputScratch } from '../../../src/runtime/output-scratch.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { BERT_FIXTURE, bertFeeds } from './bert-feeds.ts';

describe('OutputScratch', () => {
  it('reuses a buffer only once it is given back, the smallest that fits', () => {
    const scratch = new OutputScratch();
    const a = scratch.take(1000);
    const b = scratch.take(1000);
    expect(a.length).toBe(1000);
    expect(b.buffer).not.toBe(a.buffer);
    scratch.giveBack(a);
    const c = scratch.take(900);
    expect(c.buffer).toBe(a.buffer);
    expect(c.length).toBe(900);
    const big = scratch.take(100_000);
    scratch.giveBack(big);
    scratch.giveBack(b);
    expect(scratch.take(10).buffer).toBe(b.buffer);
    expect(scratch.take(50_000).buffer).toBe(big.buffer);
  });

  it('ignores arrays it did not hand out and a second give-back', () => {
    const scratch = new OutputScratch();
    scratch.giveBack(new Float32Array(10));
    scratch.giveBack(undefined);
    expect(scratch.kept).toBe(0);
    const a = scratch.take(10);
    scratch.giveBack(a);
    scratch.giveBack(a);
    expect(scratch.kept).toBe(1);
    const first = scratch.take(10);
    const second = scratch.take(10);
    expect(second.buffer).not.toBe(first.buffer);
  });

  it('keeps at most four buffers, and none over 4 MiB', () => {
    const scratch = new OutputScratch();
    const taken = Array.from({ length: 6 }, (_, i) => scratch.take(20_000 * (i + 1)));
    for (const array of taken) scratch.giveBack(array);
    expect(scratch.kept).toBe(4);
    // The four largest stay: the two smallest are not handed out again.
    const again = Array.from({ length: 4 }, () => scratch.take(1));
    expect(new Set(again.map((a) => a.buffer))).toEqual(
      new Set(taken.slice(2).map((a) => a.buffer)),
    );
    const huge = scratch.take((5 << 20) / 4);
    scratch.giveBack(huge);
    expect(scratch.kept).toBe(0);
  });
});

describe('a native run into scratch', () => {
  const ids = [101, 1592, 1088, 1003, 102];
  for (const runsOffThread of [false, true]) {
    it(`gives the values of a plain run (${runsOffThread ? "libuv's pool" : 'calling thread'})`, async () => {
      const session = createNativeSession(
        BERT_FIXTURE,
        compileRuntimeOptions({ binding: 'native' }),
        { runsOffThread },
      );
      try {
        const feeds = bertFeeds(session, ids);
        const plain = await session.run(feeds);
        const name = session.outputNames[0] as string;
        const first = await session.run(feeds, undefined, { scratch: true });
        const kept = await session.run(feeds, undefined, { scratch: true });
        const firstData = first[name]?.data as Float32Array;
        const keptData = kept[name]?.data as Float32Array;
        expect(Array.from(firstData)).toEqual(Array.from(plain[name]?.data as Float32Array));
        expect(keptData.buffer).not.toBe(firstData.buffer);
        outputScratch.giveBack(firstData);
        const reused = await session.run(feeds, undefined, { scratch: true });
        const reusedData = reused[name]?.data as Float32Array;
        expect(reusedData.buffer).toBe(firstData.buffer);
        expect(Array.from(reusedData)).toEqual(Array.from(plain[name]?.data as Float32Array));
        outputScratch.giveBack(reusedData);
        outputScratch.giveBack(keptData);
      } finally {
        await session.release();
      }
    });
  }
});
