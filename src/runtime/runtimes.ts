// Opens a session on the binding the model's options name. The native binding shares a session
// between the threads that hold the same table (a shard's); onnxruntime-node cannot, so each of
// its threads opens its own.
import { createNativeSession, type SessionSource } from './native/open-session.ts';
import { SharedSessions } from './native/shared-sessions.ts';
import { assertProvidersInstalled, type CompiledRuntimeOptions } from './runtime-options.ts';
import type { OrtSession } from './session.ts';

/** How the threads of one shard share native sessions. */
export interface SessionSharing {
  /** SharedSessions.allocate()'s memory, the same for every thread of the shard. */
  table: SharedArrayBuffer;
  /** The shard's threads: each calls Run on the shared session from its own thread. */
  threads: number;
  /** Runs each thread keeps going at once; above 1 they run on libuv's pool (default 1). */
  runsPerThread?: number;
}

export class SessionFactory {
  private readonly shared: SharedSessions | undefined;
  /** Runs of a shared session at once: the shard's threads times each one's runs. */
  private readonly callers: number;
  private readonly runsOffThread: boolean;

  constructor(sharing?: SessionSharing) {
    this.shared = sharing === undefined ? undefined : new SharedSessions(sharing.table);
    const runsPerThread = sharing?.runsPerThread ?? 1;
    this.callers = (sharing?.threads ?? 1) * runsPerThread;
    this.runsOffThread = runsPerThread > 1;
  }

  /** `source` is a model file, or a helper graph's bytes under its name (src/runtime/graphs/). */
  async open(source: SessionSource, options: CompiledRuntimeOptions): Promise<OrtSession> {
    // Imported here: onnxruntime-node costs each thread that loads it several MiB, and threads on
    // the native binding never use it.
    if (options.binding === 'onnxruntime-node')
      return (await import('./node-runtime.ts')).createNodeSession(source, options);
    assertProvidersInstalled(options);
    // Let the event loop turn before the (blocking) native load, as onnxruntime-node does.
    await new Promise((resolve) => setImmediate(resolve));
    return createNativeSession(source, options, {
      shared: this.shared,
      intraOpThreads: sharedIntraOpThreads(
        options.intraOpThreads,
        this.shared === undefined ? 1 : this.callers,
      ),
      runsOffThread: this.runsOffThread,
    });
  }
}

/**
 * The intra-op pool of a session that `threads` callers share. ONNX Runtime runs a Run's kernels
 * on its calling thread plus the session's pool (pool size - 1 threads), so where each of T
 * threads had a session of k threads (T x k in all), a shared one gets 1 + T x (k - 1): the same
 * count, the cores used once. With the default k = 1 that is 1: every Run on its own thread.
 */
export function sharedIntraOpThreads(perThread: number, threads: number): number {
  if (perThread <= 0) return 0;
  return 1 + threads * (perThread - 1);
}
