// runtime.trimHeap: 'load' hands the C heap's free pages back once a session has loaded, 'runs'
// after every Run as well (on its calling thread and on libuv's pool), with the same outputs.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import { compileRuntimeOptions } from '../../../src/runtime/runtime-options.ts';
import { createNativeSession } from '../../../src/runtime/native/open-session.ts';
import { OrtLibrary } from '../../../src/runtime/native/ort-library.ts';
import { BERT_FIXTURE, bertFeeds } from './bert-feeds.ts';

const BERT = BERT_FIXTURE;
const IDS = [101, 1592, 1088, 1003, 102];

afterEach(() => {
  vi.restoreAllMocks();
});

describe('runtime.trimHeap', () => {
  it("defaults to 'load' and names the field for a value it does not know", () => {
    expect(compileRuntimeOptions().trimHeap).toBe('load');
    const bad = () => compileRuntimeOptions({ trimHeap: 'always' as unknown as 'runs' });
    expect(bad).toThrow(ConfigError);
    expect(bad).toThrow(/trimHeap/);
  });

  it("trims after each run with 'runs' and only at load with 'load', with equal outputs", async () => {
    const trims = vi.spyOn(OrtLibrary.prototype, 'trimHeap');
    const once = createNativeSession(BERT, compileRuntimeOptions({ binding: 'native' }));
    const each = createNativeSession(
      BERT,
      compileRuntimeOptions({ binding: 'native', trimHeap: 'runs' }),
    );
    const pooled = createNativeSession(
      BERT,
      compileRuntimeOptions({ binding: 'native', trimHeap: 'runs' }),
      { runsOffThread: true },
    );
    try {
      expect(trims).toHaveBeenCalledTimes(3);
      const expected = once.runSync(bertFeeds(once, IDS));
      expect(trims).toHaveBeenCalledTimes(3);
      const trimmed = each.runSync(bertFeeds(each, IDS));
      expect(trims).toHaveBeenCalledTimes(4);
      const offThread = await pooled.run(bertFeeds(pooled, IDS));
      expect(trims).toHaveBeenCalledTimes(5);
      for (const name of once.outputNames) {
        expect(Array.from(trimmed[name]!.data as Float32Array)).toEqual(
          Array.from(expected[name]!.data as Float32Array),
        );
        expect(Array.from(offThread[name]!.data as Float32Array)).toEqual(
          Array.from(expected[name]!.data as Float32Array),
        );
      }
    } finally {
      await Promise.all([once.release(), each.release(), pooled.release()]);
    }
  });
});
