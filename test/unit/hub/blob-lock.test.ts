// One writer per blob: a live holder is waited for and its finished blob used, a holder on this
// host whose process is gone frees its lock at once, an untouched lock goes stale.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withBlobLock } from '../../../src/hub/blob-lock.ts';

/** A bound on a wait that should end at once: failing beats hanging (not a speed check). */
const GIVE_UP_MS = 20_000;
const HOUR = 3_600_000;

describe('blob lock', () => {
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'hugot-lock-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('waits for a live holder and does not redo what it finished', async () => {
    const lock = join(dir, 'blob.lock');
    let finished = false;
    let runs = 0;
    // Resolved once the waiter has looked three times: it is waiting, not working.
    let looked = 0;
    let lookedThrice: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => (lookedThrice = resolve));
    const done = (): Promise<boolean> => {
      looked += 1;
      if (looked === 3) lookedThrice();
      return Promise.resolve(finished);
    };
    // This process holds the lock and is alive.
    await writeFile(lock, `${process.pid} ${hostname()}\n`);
    const waiter = withBlobLock(
      lock,
      done,
      () => {
        runs += 1;
        return Promise.resolve();
      },
      { pollMs: 5, staleMs: HOUR, signal: AbortSignal.timeout(GIVE_UP_MS) },
    );
    await waiting;
    expect(runs).toBe(0);
    finished = true;
    await rm(lock);
    await waiter;
    expect(runs).toBe(0);
  });

  it('takes over at once the lock of a process on this host that is gone (a pull stopped with Ctrl-C)', async () => {
    const lock = join(dir, 'blob.lock');
    const pid = await new Promise<number>((resolve) => {
      const child = spawn(process.execPath, ['-e', '']);
      child.on('exit', () => resolve(child.pid ?? 0));
    });
    await writeFile(lock, `${pid} ${hostname()}\n`);
    let runs = 0;
    await withBlobLock(
      lock,
      () => Promise.resolve(false),
      () => {
        runs += 1;
        return Promise.resolve();
      },
      { pollMs: 5, staleMs: HOUR, signal: AbortSignal.timeout(GIVE_UP_MS) },
    );
    expect(runs).toBe(1);
    await expect(stat(lock)).rejects.toThrow();
  });

  it('takes over a lock held on another host once it goes untouched past the stale bound', async () => {
    const lock = join(dir, 'blob.lock');
    await writeFile(lock, `1 some-other-host\n`);
    const old = new Date(Date.now() - 120_000);
    await utimes(lock, old, old);
    let runs = 0;
    await withBlobLock(
      lock,
      () => Promise.resolve(false),
      () => {
        runs += 1;
        return Promise.resolve();
      },
      { pollMs: 5, staleMs: 60_000, signal: AbortSignal.timeout(GIVE_UP_MS) },
    );
    expect(runs).toBe(1);
  });
});
