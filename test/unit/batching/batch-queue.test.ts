import { describe, expect, it } from 'vitest';
import {
  compileBatcherOptions,
  type BatcherOptions,
} from '../../../src/batching/batcher-options.ts';
import { BatchQueue, paddedTokens, type Pressure } from '../../../src/batching/batch-queue.ts';

function queue(options: BatcherOptions = {}): BatchQueue<string> {
  return new BatchQueue<string>(compileBatcherOptions({ maxWaitMs: 10, ...options }));
}

const names = (items: { payload: string }[] | undefined): string[] =>
  (items ?? []).map((i) => i.payload);

describe('BatchQueue: cutting by budget', () => {
  it('cuts at the padded-token budget (longest x rows), not only at the count', () => {
    const q = queue({ maxBatchTokens: 30, maxBatchSize: 100 });
    for (const name of ['a', 'b', 'c', 'd']) q.push(name, 10, 0);
    expect(names(q.cut(0).batch)).toEqual(['a', 'b', 'c']);
    expect(q.cut(0).batch).toBeUndefined();
    expect(names(q.cut(10).batch)).toEqual(['d']);
  });

  it('counts every row of a multi-row item against the budget', () => {
    const q = queue({ maxBatchTokens: 40 });
    q.push('qa', 10, 0, { rows: 3 });
    q.push('x', 10, 0);
    q.push('y', 10, 0);
    expect(names(q.cut(0).batch)).toEqual(['qa', 'x']);
  });

  it('cuts at maxBatchSize', () => {
    const q = queue({ maxBatchSize: 2 });
    for (const name of ['a', 'b', 'c']) q.push(name, 5, 0);
    expect(names(q.cut(0).batch)).toEqual(['a', 'b']);
  });

  it('sends an item longer than the whole budget alone rather than never', () => {
    const q = queue({ maxBatchTokens: 50 });
    q.push('huge', 500, 0);
    q.push('small', 5, 0);
    expect(names(q.cut(0).batch)).toEqual(['huge']);
  });

  it("cuts a due batch only within a message's room, leaving one that does not fit queued", () => {
    const q = queue({ maxBatchTokens: 30, maxBatchSize: 100 });
    for (const name of ['a', 'b', 'c', 'd', 'e']) q.push(name, 10, 0);
    expect(q.cut(0, false, 20).batch).toBeUndefined();
    expect(q.size).toBe(5);
    expect(names(q.cut(0, false, 30).batch)).toEqual(['a', 'b', 'c']);
    // The rest is neither full nor due: room alone never makes a batch due.
    expect(q.cut(0, false, 1000).batch).toBeUndefined();
    expect(names(q.cut(10, false, 20).batch)).toEqual(['d', 'e']);
    expect(
      paddedTokens([
        { tokens: 7, rows: 2 },
        { tokens: 9, rows: 1 },
      ] as never),
    ).toBe(27);
  });
});

describe('BatchQueue: length-aware and fair', () => {
  it('puts similar lengths together', () => {
    const q = queue({ maxBatchSize: 3, maxBatchTokens: 10_000 });
    const lengths = [100, 5, 98, 6, 97, 4];
    lengths.forEach((len, i) => q.push(`${len}#${i}`, len, 0));
    const first = q.cut(0).batch ?? [];
    const second = q.cut(0).batch ?? [];
    expect(first.map((i) => i.tokens).sort((a, b) => a - b)).toEqual([97, 98, 100]);
    expect(second.map((i) => i.tokens).sort((a, b) => a - b)).toEqual([4, 5, 6]);
    const padded = (b: typeof first): number => Math.max(...b.map((i) => i.tokens)) * b.length;
    const real = lengths.reduce((a, b) => a + b, 0);
    expect(real / (padded(first) + padded(second))).toBeGreaterThan(0.95);
  });

  it("order 'arrival' keeps the budget but takes mates in arrival order", () => {
    const push = (q: BatchQueue<string>): void =>
      [100, 5, 98, 6, 97, 4].forEach((len, i) => q.push(`${len}#${i}`, len, 0));
    const arrival = queue({ maxBatchSize: 3, maxBatchTokens: 250, order: 'arrival' });
    push(arrival);
    // A third row would pad to 100 x 3 = 300 > 250: the budget still cuts.
    expect(names(arrival.cut(0).batch)).toEqual(['100#0', '5#1']);
    expect(names(arrival.cut(0).batch)).toEqual(['98#2', '6#3']);
    // The last two end the queue: not full, so they go when their wait is up.
    expect(names(arrival.cut(10).batch)).toEqual(['97#4', '4#5']);
    const length = queue({ maxBatchSize: 3, maxBatchTokens: 250 });
    push(length);
    expect(names(length.cut(0).batch)).toEqual(['100#0', '98#2']);
  });

  it('always includes the oldest item, so a long item among many short ones is not starved', () => {
    const q = queue({ maxBatchSize: 4, maxBatchTokens: 10_000, sortWindow: 64 });
    q.push('long', 300, 0);
    let now = 0;
    const served: string[] = [];
    for (let round = 0; round < 5; round += 1) {
      for (let i = 0; i < 8; i += 1) q.push(`short-${round}-${i}`, 5, now);
      served.push(...names(q.cut(now).batch));
      now += 1;
    }
    expect(served[0]).toBe('long');
  });

  it('waits for a full batch until the oldest item has waited maxWaitMs', () => {
    const q = queue({ maxBatchSize: 4, maxWaitMs: 10 });
    q.push('a', 5, 0);
    q.push('b', 5, 3);
    expect(q.cut(4)).toMatchObject({ waitMs: 6 });
    expect(q.cut(4).batch).toBeUndefined();
    expect(names(q.cut(10).batch)).toEqual(['a', 'b']);
  });

  it('flush cuts what there is at once', () => {
    const q = queue({ maxBatchSize: 4 });
    q.push('a', 5, 0);
    expect(names(q.cut(0, true).batch)).toEqual(['a']);
  });

  it('serves urgent priorities first, but never past the wait bound of an older item', () => {
    const q = queue({ maxBatchSize: 1, priorities: 3, maxWaitMs: 10 });
    q.push('low', 5, 0, { priority: 2 });
    let now = 0;
    const served: string[] = [];
    while (!served.includes('low')) {
      q.push(`high-${now}`, 5, now, { priority: 0 });
      served.push(...names(q.cut(now).batch));
      now += 1;
    }
    expect(served[0]).toBe('high-0');
    // 'low' went out as soon as it had waited maxWaitMs, although urgent work kept arriving.
    expect(now - 1).toBe(10);
  });
});

describe('BatchQueue: deadlines, cancellation and admission', () => {
  it('completes expired items without running them', () => {
    const q = queue();
    q.push('late', 5, 0, { deadline: 5 });
    q.push('fine', 5, 0, { deadline: 50 });
    const cut = q.cut(20);
    expect(names(cut.expired)).toEqual(['late']);
    expect(names(cut.batch)).toEqual(['fine']);
    expect(q.size).toBe(0);
  });

  it('skips cancelled items', () => {
    const q = queue();
    const controller = new AbortController();
    q.push('gone', 5, 0, { signal: controller.signal });
    q.push('kept', 5, 0);
    controller.abort();
    const cut = q.cut(10);
    expect(names(cut.cancelled)).toEqual(['gone']);
    expect(names(cut.batch)).toEqual(['kept']);
  });

  it('tells sources to pause when full and to resume when drained to resumeAt', () => {
    const q = queue({ maxQueued: 4, resumeAt: 1, maxBatchSize: 2 });
    const signals: Pressure[] = [];
    q.onPressure((p) => signals.push(p));
    for (let i = 0; i < 4; i += 1) q.push(`r${i}`, 5, 0);
    expect(signals).toEqual(['pause']);
    expect(q.isPaused).toBe(true);
    q.cut(0);
    expect(signals).toEqual(['pause']);
    q.cut(0);
    expect(signals).toEqual(['pause', 'resume']);
    expect(q.isPaused).toBe(false);
  });

  it('rejects options that contradict each other, naming the field', () => {
    expect(() => compileBatcherOptions({ maxQueued: 10, resumeAt: 10 })).toThrow(
      /batching\.resumeAt: resumeAt must be below maxQueued/,
    );
    expect(() => compileBatcherOptions({ maxBatchSize: 0 })).toThrow(/batching\.maxBatchSize/);
  });
});
