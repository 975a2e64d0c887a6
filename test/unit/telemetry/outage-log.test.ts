import { describe, expect, it } from 'vitest';
import type { Logger } from '../../../src/logger.ts';
import { outageLog } from '../../../src/telemetry/outage-log.ts';

describe('outage log', () => {
  it('logs where an outage starts and where it ends, not every reconnect, and counts it', () => {
    const lines: string[] = [];
    const push = (_: object, message: string): void => void lines.push(message);
    const logger: Logger = { debug: push, info: push, warn: push, error: push };
    const outages: string[] = [];
    let now = 10_000;
    const report = outageLog({
      logger,
      onOutage: (r, end) => outages.push(`${r}/${end}`),
      now: () => now,
    });
    report('jobs', 'source', { state: 'healthy' });
    const reason = 'Redis unreachable (BullMQ queue q)';
    report('jobs', 'source', { state: 'degraded', reason, attempt: 1, sinceMs: 0 });
    now += 5_000;
    report('jobs', 'source', { state: 'degraded', reason, attempt: 2, sinceMs: 5_000 });
    report('jobs', 'source', { state: 'degraded', reason, attempt: 3, sinceMs: 5_000 });
    now += 2_500;
    report('jobs', 'source', { state: 'healthy' });
    report('jobs', 'source', { state: 'healthy' });
    expect(lines).toEqual([
      `route jobs: outage began: ${reason}; reconnecting with backoff (not ready meanwhile)`,
      'route jobs: outage over after 7500 ms (3 reconnect attempts)',
    ]);
    expect(outages).toEqual(['jobs/source']);
  });

  it("keeps a route's source and sinks apart, naming the sink", () => {
    const lines: string[] = [];
    const push = (_: object, message: string): void => void lines.push(message);
    const logger: Logger = { debug: push, info: push, warn: push, error: push };
    const outages: string[] = [];
    let now = 0;
    const report = outageLog({
      logger,
      onOutage: (r, end) => outages.push(`${r}/${end}`),
      now: () => now,
    });
    const reason = 'Redis unreachable (stream out)';
    report('enrich', 'sink', { state: 'degraded', reason, attempt: 1, sinceMs: 0 });
    report('enrich', 'source', {
      state: 'degraded',
      reason: 'broker gone',
      attempt: 1,
      sinceMs: 0,
    });
    now += 1_000;
    // The source back says nothing of the sink, which is still down.
    report('enrich', 'source', { state: 'healthy' });
    now += 1_000;
    report('enrich', 'sink', { state: 'healthy' });
    expect(lines).toEqual([
      `route enrich sink: outage began: ${reason}; reconnecting with backoff (not ready meanwhile)`,
      'route enrich: outage began: broker gone; reconnecting with backoff (not ready meanwhile)',
      'route enrich: outage over after 1000 ms (1 reconnect attempts)',
      'route enrich sink: outage over after 2000 ms (1 reconnect attempts)',
    ]);
    expect(outages).toEqual(['enrich/sink', 'enrich/source']);
  });
});
