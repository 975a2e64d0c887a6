// One log line per dead letter, so that an operator sees why records fail without reading the
// DLQ, but rate-limited: a poison-pill storm must not turn the log into a second copy of the DLQ.
// Past `perWindow` lines in a window, the rest are counted and said in one line when the next
// dead letter arrives after the window.
import type { Logger } from '../logger.ts';
import type { DeadLetterCode } from './dead-letter-codes.ts';

export interface DeadLetterLogOptions {
  logger: Logger;
  route: string;
  /** Lines per window before the rest are only counted. */
  perWindow?: number;
  windowMs?: number;
  now?: () => number;
}

export interface DeadLetterNote {
  code: DeadLetterCode;
  message: string;
  /** The source position (describeOrigin). */
  origin: string;
}

export class DeadLetterLog {
  private readonly options: Required<DeadLetterLogOptions>;
  private windowStart = -Infinity;
  private logged = 0;
  private suppressed = 0;

  constructor(options: DeadLetterLogOptions) {
    this.options = { perWindow: 10, windowMs: 10_000, now: () => performance.now(), ...options };
  }

  note(dead: DeadLetterNote): void {
    const { logger, route, perWindow, windowMs, now } = this.options;
    const at = now();
    if (at - this.windowStart >= windowMs) {
      if (this.suppressed > 0)
        logger.warn(
          { route, suppressed: this.suppressed, windowMs },
          `${this.suppressed} more dead letters were not logged one by one (at most ${perWindow} lines per ${windowMs / 1000} s)`,
        );
      this.windowStart = at;
      this.logged = 0;
      this.suppressed = 0;
    }
    if (this.logged >= perWindow) {
      this.suppressed += 1;
      return;
    }
    this.logged += 1;
    logger.warn({ route, code: dead.code, origin: dead.origin }, `dead-lettered: ${dead.message}`);
  }
}
