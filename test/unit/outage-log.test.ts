import { describe, expect, it } from 'vitest';
import type { Logger } from '../../src/logger.ts';
import { outageLog } from '../../src/telemetry/outage-log.ts';

describe('outage log', () => {
  it('logs where an outage starts and where it ends, not every reconnect, and counts it', () => {
    const lines: string[] = [];
    const push = (_: object, message: string): void => void lines.push(message);
    const logger: Logger = { debug: push, info: push, warn: push, error: push };
    const outages: string[] = [];
    let now = 10_000;
    const report = outageLog({ logger, onOutage: (r) => outages.push(r), now: () => now });
    report('jobs', { state: 'healthy' });
    const reason = 'Redis unreachable (BullMQ queue q)';
    report('jobs', { state: 'degraded', reason, attempt: 1, sinceMs: 0 });
    now += 5_000;
    report('jobs', { state: 'degraded', reason, attempt: 2, sinceMs: 5_000 });
    report('jobs', { state: 'degraded', reason, attempt: 3, sinceMs: 5_000 });
    now += 2_500;
    report('jobs', { state: 'healthy' });
    report('jobs', { state: 'healthy' });
    expect(lines).toEqual([
      `route jobs: outage began: ${reason}; reconnecting with backoff (not ready meanwhile)`,
      'route jobs: outage over after 7500 ms (3 reconnect attempts)',
    ]);
    expect(outages).toEqual(['jobs']);
  });
});
