// Reconnect and retry delays: exponential with "equal jitter" (half fixed, half random), so a
// fleet of workers that lost the same broker does not come back in lockstep, and reset once the
// connection works again.
export interface BackoffOptions {
  initialMs: number;
  maxMs: number;
  /** Source of randomness in [0, 1); tests pass a fixed one. */
  random?: () => number;
}

export class Backoff {
  private readonly options: Required<BackoffOptions>;
  private failures = 0;

  constructor(options: BackoffOptions) {
    this.options = { random: Math.random, ...options };
  }

  /** Consecutive failures since the last reset. */
  get attempts(): number {
    return this.failures;
  }

  /** The delay before the next attempt; each call counts one more failure. */
  next(): number {
    const { initialMs, maxMs, random } = this.options;
    const ceiling = Math.min(maxMs, initialMs * 2 ** Math.min(this.failures, 30));
    this.failures += 1;
    return Math.round(ceiling / 2 + (random() * ceiling) / 2);
  }

  reset(): void {
    this.failures = 0;
  }
}
