import { describe, expect, it } from 'vitest';
import { ProgressStalledError, waitForProgress, type Clock } from '../../helpers/progress.ts';

/** Virtual time: sleeping moves it on, nothing waits for real. */
function virtualClock(): Clock & { elapsed: () => number } {
  let now = 0;
  return {
    now: () => now,
    sleep: (ms) => {
      now += ms;
      return Promise.resolve();
    },
    elapsed: () => now,
  };
}

describe('waitForProgress', () => {
  it('passes a slow but steady run however long it takes in total', async () => {
    const clock = virtualClock();
    // One more record every 8 s: 100 records take 800 s, far past any fixed total a test had.
    const value = await waitForProgress(() => Math.floor(clock.now() / 8_000), {
      what: '100 records',
      done: (n) => n >= 100,
      stallMs: 10_000,
      intervalMs: 1_000,
      clock,
    });
    expect(value).toBe(100);
    expect(clock.elapsed()).toBeGreaterThanOrEqual(800_000);
  });

  it('fails when the measure stops changing for stallMs, saying what it saw last', async () => {
    const clock = virtualClock();
    const wait = waitForProgress(() => Math.min(7, Math.floor(clock.now() / 2_000)), {
      what: '100 outputs',
      done: (n) => n >= 100,
      stallMs: 10_000,
      intervalMs: 500,
      clock,
    });
    await expect(wait).rejects.toThrow(ProgressStalledError);
    await expect(wait).rejects.toThrow(
      /^100 outputs: no progress for 10\.0 s; last seen 7 after 24\.\d s and 7 changes$/,
    );
    // It reached 7 at 14 s and gave up 10 s later, not at some fixed total.
    expect(clock.elapsed()).toBeGreaterThanOrEqual(24_000);
    expect(clock.elapsed()).toBeLessThan(25_000);
  });

  it('gives start-up its own bound before the first change', async () => {
    const clock = virtualClock();
    // Nothing for 25 s (a process loading its model), then steady progress.
    const value = await waitForProgress(
      () => Math.max(0, Math.floor((clock.now() - 25_000) / 1_000)),
      {
        what: '10 outputs',
        done: (n) => n >= 10,
        stallMs: 5_000,
        firstProgressMs: 30_000,
        intervalMs: 500,
        clock,
      },
    );
    expect(value).toBe(10);

    const never = waitForProgress(() => 0, {
      what: 'the first output',
      done: (n) => n > 0,
      stallMs: 5_000,
      firstProgressMs: 30_000,
      clock: virtualClock(),
    });
    await expect(never).rejects.toThrow(/no progress for 30\.0 s \(never advanced\); last seen 0/);
  });

  it('counts any change of a composite measure as progress', async () => {
    const clock = virtualClock();
    // Two partitions' offsets, each moving in turn: the sum would do too, but a list must work.
    const offsets = (): number[] => {
      const step = Math.floor(clock.now() / 3_000);
      return [Math.ceil(step / 2), Math.floor(step / 2)];
    };
    const value = await waitForProgress(offsets, {
      what: 'both partitions at 20',
      done: ([a, b]) => a === 20 && b === 20,
      stallMs: 4_000,
      intervalMs: 1_000,
      clock,
    });
    expect(value).toEqual([20, 20]);
  });

  it('treats a failing probe as no progress, and names its last error when it gives up', async () => {
    const clock = virtualClock();
    let calls = 0;
    // A broker that refuses the first few probes (busy starting), then answers.
    const recovered = await waitForProgress(
      () => {
        calls += 1;
        if (calls <= 3) throw new Error('connection refused');
        return calls;
      },
      { what: '6 probes', done: (n) => n >= 6, stallMs: 5_000, intervalMs: 1_000, clock },
    );
    expect(recovered).toBe(6);

    const broken = waitForProgress(
      () => {
        throw new TypeError('admin is not connected');
      },
      { what: 'committed offsets', done: () => true, stallMs: 5_000, clock: virtualClock() },
    );
    await expect(broken).rejects.toThrow(
      /committed offsets: no progress for 5\.0 s \(never advanced\); last seen nothing .*; the probe last failed with: TypeError: admin is not connected/,
    );
    const error: unknown = await broken.catch((e: unknown) => e);
    expect((error as Error).cause).toBeInstanceOf(TypeError);
  });

  it('adds the caller’s context to the failure, read when it fails', async () => {
    let log = 'starting';
    const clock = virtualClock();
    const wait = waitForProgress(
      () => {
        log = `worker log at ${clock.now()} ms`;
        return 0;
      },
      {
        what: 'outputs',
        done: () => false,
        stallMs: 2_000,
        intervalMs: 1_000,
        clock,
        context: () => log,
      },
    );
    await expect(wait).rejects.toThrow(/\nworker log at 2000 ms$/);
  });

  it('gives up at once when abort() names a reason', async () => {
    const clock = virtualClock();
    const wait = waitForProgress(() => 12, {
      what: 'outputs before the kill',
      done: (n) => n >= 800,
      stallMs: 60_000,
      intervalMs: 1_000,
      clock,
      abort: () => (clock.now() >= 3_000 ? 'the worker exited with code 1' : undefined),
    });
    await expect(wait).rejects.toThrow(
      'outputs before the kill: the worker exited with code 1; last seen 12',
    );
    expect(clock.elapsed()).toBe(3_000);
  });

  it('waits on the real clock by default', async () => {
    let calls = 0;
    const value = await waitForProgress(() => (calls += 1), {
      what: 'three probes',
      done: (n) => n === 3,
      intervalMs: 5,
    });
    expect(value).toBe(3);
  });
});
