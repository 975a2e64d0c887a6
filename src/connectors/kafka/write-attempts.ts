// How often each record's write has failed, and how long each partition waits before it is read
// again: the state behind delivery.maxAttempts and the rewind backoff of the Kafka source.
import { Backoff } from '../backoff.ts';

export interface Failure {
  count: number;
  reason: string;
}

export class WriteAttempts {
  private readonly failures = new Map<string, Failure>();
  private readonly backoffs = new Map<string, Backoff>();

  readonly maxAttempts: number;

  constructor(maxAttempts: number) {
    this.maxAttempts = maxAttempts;
  }

  /** The record's failures once they reached maxAttempts; undefined while it may still be tried. */
  exhausted(laneKey: string, offset: string): Failure | undefined {
    const failure = this.failures.get(recordKey(laneKey, offset));
    return failure !== undefined && failure.count >= this.maxAttempts ? failure : undefined;
  }

  /** Counts a failure against the record unless it is an outage; returns the count so far. */
  failed(laneKey: string, offset: string, err: unknown): { attempt: number; transient: boolean } {
    const transient = isTransient(err);
    const key = recordKey(laneKey, offset);
    const attempt = (this.failures.get(key)?.count ?? 0) + (transient ? 0 : 1);
    if (!transient) this.failures.set(key, { count: attempt, reason: errorText(err) });
    return { attempt, transient };
  }

  written(laneKey: string, offset: string): void {
    this.failures.delete(recordKey(laneKey, offset));
    this.backoffs.get(laneKey)?.reset();
  }

  /** How long the partition waits before it is read again: jittered, growing while writes fail. */
  nextRewindDelayMs(laneKey: string): number {
    let backoff = this.backoffs.get(laneKey);
    if (backoff === undefined) {
      backoff = new Backoff({ initialMs: 200, maxMs: 30_000 });
      this.backoffs.set(laneKey, backoff);
    }
    return backoff.next();
  }

  /** Counts follow a partition only while it stays assigned here. */
  keepOnly(isAssigned: (laneKey: string) => boolean): void {
    for (const key of this.failures.keys())
      if (!isAssigned(key.slice(0, key.lastIndexOf('\u0000')))) this.failures.delete(key);
    for (const key of this.backoffs.keys()) if (!isAssigned(key)) this.backoffs.delete(key);
  }
}

function recordKey(laneKey: string, offset: string): string {
  return `${laneKey}\u0000${offset}`;
}

function errorText(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** Kafka client names of failures that say the broker or the network is away, not the record. */
const OUTAGE_NAMES = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSBrokerNotFound',
  'KafkaJSLockTimeout',
  'ConnectionError',
  // The worker is shutting down and gave the record up.
  'ClosedError',
]);

/** An outage or another failure that says nothing about the record: it does not count. */
export function isTransient(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 8; depth += 1) {
    if (OUTAGE_NAMES.has(e.name) || (e as { retriable?: unknown }).retriable === true) return true;
    e = e.cause;
  }
  return false;
}
