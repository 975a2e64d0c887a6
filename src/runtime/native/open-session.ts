// Opening a native session: a model file or a helper graph's bytes, alone or as a share of the
// session a shard's threads hold in common (shared-sessions.ts), keyed by what it was opened with.
import { sessionLoadError } from '../load-error.ts';
import { memPatternFor, sessionDevice, type CompiledRuntimeOptions } from '../runtime-options.ts';
import { createSessionOptions } from './native-session-options.ts';
import { NativeSession, type SessionPlace } from './native-session.ts';
import { OrtLibrary, type Pointer } from './ort-library.ts';
import type { SharedSessions } from './shared-sessions.ts';
import { memoryOf, threadHandlesOf } from './thread-handles.ts';

/** A model file, or a helper graph's bytes (src/runtime/graphs/) under a name for errors. */
export type SessionSource = string | { name: string; bytes: Uint8Array };

export interface NativeSessionOptions {
  /** When given, the session is shared with every thread holding the same table. */
  shared?: SharedSessions | undefined;
  /** The session's own intra-op pool; by default options.intraOpThreads. */
  intraOpThreads?: number;
  /**
   * run() calls Run on one of libuv's pool threads instead of the calling thread, so that one
   * JavaScript thread keeps several runs of a shared session going at once (a shard's
   * runsPerThread, src/shards/shard-spec.ts).
   */
  runsOffThread?: boolean;
}

/** Opens `source` on the native binding (or takes a share of the table's session for it). */
export function createNativeSession(
  source: SessionSource,
  options: CompiledRuntimeOptions,
  {
    shared,
    intraOpThreads = options.intraOpThreads,
    runsOffThread = false,
  }: NativeSessionOptions = {},
): NativeSession {
  const lib = OrtLibrary.get();
  const thread = threadHandlesOf(lib);
  const label = typeof source === 'string' ? source : source.name;
  const place: SessionPlace = {
    memory: memoryOf(lib, thread, sessionDevice(options)),
    options,
    runsOffThread,
    openHelper: (name, bytes) =>
      createNativeSession({ name, bytes }, options, { intraOpThreads: 1 }),
  };
  const open = (): Pointer => openSession(lib, thread.env, source, options, intraOpThreads);
  if (shared === undefined) return new NativeSession(lib, thread, label, open(), undefined, place);
  // A helper graph is named after what it computes (poolingGraphName), so its name is its key.
  const key = JSON.stringify([label, options, intraOpThreads]);
  const { address } = shared.acquire(key, open);
  return new NativeSession(lib, thread, label, address, { table: shared, key }, place);
}

function openSession(
  lib: OrtLibrary,
  env: Pointer,
  source: SessionSource,
  options: CompiledRuntimeOptions,
  intraOpThreads: number,
): Pointer {
  const memPattern = memPatternFor(source, options);
  const sessionOptions = createSessionOptions(lib, options, intraOpThreads, memPattern);
  try {
    if (typeof source === 'string') return lib.out('CreateSession', env, source, sessionOptions);
    const { bytes } = source;
    return lib.out('CreateSessionFromArray', env, bytes, bytes.byteLength, sessionOptions);
  } catch (cause) {
    throw sessionLoadError(cause, typeof source === 'string' ? source : source.name, options);
  } finally {
    lib.fn('ReleaseSessionOptions')(sessionOptions);
    lib.trimHeap();
  }
}
