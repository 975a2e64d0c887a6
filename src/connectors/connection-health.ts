// What a source or a sink says of its connection to its broker: 'degraded' while it reconnects
// (it keeps trying, with backoff), 'healthy' once it reads or writes again, 'failed' when it gave
// up for good (the worker then stops; a connector never exits the process itself).
export type ConnectionHealth =
  | { state: 'healthy' }
  | { state: 'degraded'; reason: string; attempt: number; sinceMs: number }
  | { state: 'failed'; reason: string };
