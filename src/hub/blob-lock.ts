// One writer per blob across processes sharing a cache (replicas starting together on one
// volume): whoever creates `<blob>.lock` first downloads, the others wait for the blob to appear.
// The holder touches the lock while it works, so a lock whose holder died (kill -9, a lost node)
// goes stale and is taken over instead of blocking every later pull (at once when the holder was
// a process on this host that is gone). Node has no flock, and
// Python's lock files under `.locks/` outlive their locks, so this is our own file beside the blob.
import { open, readFile, rm, stat, utimes } from 'node:fs/promises';
import { hostname } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

export interface BlobLockOptions {
  /** How often the holder touches its lock. */
  heartbeatMs?: number;
  /** A lock untouched for this long has lost its holder. */
  staleMs?: number;
  /** How often a waiter looks again. */
  pollMs?: number;
  signal?: AbortSignal;
}

const DEFAULTS = { heartbeatMs: 5_000, staleMs: 30_000, pollMs: 250 };

/**
 * Runs `work` holding the lock at `path`, unless `done()` says another holder finished the job
 * while this one waited; then resolves without running it.
 */
export async function withBlobLock(
  path: string,
  done: () => Promise<boolean>,
  work: () => Promise<void>,
  options: BlobLockOptions = {},
): Promise<void> {
  const { heartbeatMs, staleMs, pollMs } = { ...DEFAULTS, ...options };
  for (;;) {
    const handle = await open(path, 'wx').catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return undefined;
      throw err;
    });
    if (handle !== undefined) {
      await handle.writeFile(`${process.pid} ${hostname()}\n`);
      await handle.close();
      const beat = setInterval(() => {
        const now = new Date();
        utimes(path, now, now).catch(() => undefined);
      }, heartbeatMs);
      beat.unref();
      try {
        // The blob may have been finished between our check and taking the lock.
        if (!(await done())) await work();
        return;
      } finally {
        clearInterval(beat);
        await rm(path, { force: true });
      }
    }
    if (await done()) return;
    const touched = await stat(path).then(
      (s) => s.mtimeMs,
      () => undefined,
    );
    const stale = touched !== undefined && Date.now() - touched > staleMs;
    if (stale || (await holderGone(path))) await rm(path, { force: true });
    else await sleep(pollMs, undefined, { signal: options.signal });
  }
}

/**
 * A holder on this host whose process is gone (a pull stopped with Ctrl-C) frees its lock at once;
 * one on another host is judged by the heartbeat alone.
 */
async function holderGone(path: string): Promise<boolean> {
  const text = await readFile(path, 'utf8').catch(() => '');
  const [pid, host] = text.trim().split(' ');
  if (host !== hostname() || pid === undefined || !/^\d+$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
