// The end of a shard's shared sessions: once its threads have stopped (a thread that exits without
// closing its store still holds a share), the shard frees whatever the table still holds. The
// library is only loaded here when there is something to free.
import { OrtLibrary, type Pointer } from './ort-library.ts';
import { SharedSessions } from './shared-sessions.ts';

export function releaseSharedSessions(table: SharedArrayBuffer): number {
  const sessions = new SharedSessions(table);
  if (sessions.size === 0) return 0;
  const release = OrtLibrary.get().fn('ReleaseSession');
  return sessions.releaseAll((address: Pointer) => void release(address));
}
