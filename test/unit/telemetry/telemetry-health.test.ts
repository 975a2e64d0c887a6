import { afterEach, describe, expect, it, vi } from 'vitest';
import { HealthState } from '../../../src/telemetry/health.ts';
import { LagMonitor } from '../../../src/telemetry/lag-monitor.ts';
import { statsLine } from '../../../src/telemetry/stats-line.ts';
import { meteredGeneration } from '../../../src/telemetry/metered-generation.ts';
import { childLogger, silentLogger, type Logger } from '../../../src/logger.ts';
import type { GenerationEvent } from '../../../src/pipelines/generation/text-generation.ts';

afterEach(() => {
  vi.useRealTimers();
});

function recording(): { logger: Logger; lines: { fields: object; message: string }[] } {
  const lines: { fields: object; message: string }[] = [];
  const push = (fields: object, message: string): void => void lines.push({ fields, message });
  return { logger: { debug: push, info: push, warn: push, error: push }, lines };
}

describe('HealthState', () => {
  it('is ready only once warm, every source started and Kafka joined, and not while draining', () => {
    const health = new HealthState({ sourceOutageMs: 1000 });
    health.addSource('events', true);
    health.addSource('jobs', false);
    expect(health.readiness().reasons).toEqual([
      'models are loading',
      'source events is starting',
      'source jobs is starting',
    ]);
    health.warmed();
    health.sourceStarted('events');
    health.sourceStarted('jobs');
    expect(health.readiness()).toEqual({
      ok: false,
      reasons: ['source events has not joined its group'],
    });
    health.connectionHealth('events', { state: 'healthy' });
    expect(health.readiness()).toEqual({ ok: true, reasons: [] });
    health.startDraining();
    expect(health.readiness()).toEqual({ ok: false, reasons: ['draining for shutdown'] });
    expect(health.liveness().ok).toBe(true);
  });

  it('a reconnecting source is not ready but alive, until the outage bound passes', () => {
    vi.useFakeTimers();
    let now = 0;
    const health = new HealthState({ sourceOutageMs: 10_000, now: () => now });
    const failures: string[] = [];
    health.onFailure((reason) => failures.push(reason));
    health.addSource('stream', false);
    health.warmed();
    health.sourceStarted('stream');
    health.connectionHealth('stream', {
      state: 'degraded',
      reason: 'ECONNREFUSED',
      attempt: 1,
      sinceMs: 0,
    });
    expect(health.readiness().ok).toBe(false);
    expect(health.liveness().ok).toBe(true);
    now = 9_000;
    vi.advanceTimersByTime(9_000);
    expect(failures).toEqual([]);
    now = 10_500;
    vi.advanceTimersByTime(1_500);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toContain('source stream could not reconnect');
    expect(health.liveness().ok).toBe(false);
  });

  it('a source that comes back in time resets the bound', () => {
    vi.useFakeTimers();
    let now = 0;
    const health = new HealthState({ sourceOutageMs: 10_000, now: () => now });
    health.addSource('stream', false);
    health.sourceStarted('stream');
    health.connectionHealth('stream', {
      state: 'degraded',
      reason: 'down',
      attempt: 1,
      sinceMs: 0,
    });
    now = 5_000;
    vi.advanceTimersByTime(5_000);
    health.connectionHealth('stream', { state: 'healthy' });
    now = 20_000;
    vi.advanceTimersByTime(15_000);
    expect(health.liveness().ok).toBe(true);
  });

  it('a source that reports failed turns liveness red at once, and failure is heard once', () => {
    const health = new HealthState({ sourceOutageMs: 10_000 });
    const failures: string[] = [];
    health.onFailure((reason) => failures.push(reason));
    health.addSource('jobs', false);
    health.connectionHealth('jobs', { state: 'failed', reason: 'worker closed' });
    health.connectionHealth('jobs', { state: 'failed', reason: 'again' });
    expect(health.liveness()).toEqual({
      ok: false,
      reasons: ['source jobs failed for good: worker closed'],
    });
    expect(failures).toEqual(['source jobs failed for good: worker closed']);
  });

  it('a reconnecting sink makes the worker not ready, never failed, and ready again once back', () => {
    vi.useFakeTimers();
    let now = 0;
    const health = new HealthState({ sourceOutageMs: 1_000, now: () => now });
    health.addSource('enrich', false);
    health.addSink('sink/enrich', 'sink of route enrich');
    health.warmed();
    health.sourceStarted('enrich');
    expect(health.readiness().ok).toBe(true);
    health.connectionHealth('sink/enrich', {
      state: 'degraded',
      reason: 'Redis unreachable (stream out)',
      attempt: 1,
      sinceMs: 0,
    });
    expect(health.readiness()).toEqual({
      ok: false,
      reasons: ['sink of route enrich is reconnecting: Redis unreachable (stream out)'],
    });
    // Far past the outage bound: what the sink could not write is delivered again by the source.
    now = 60_000;
    vi.advanceTimersByTime(60_000);
    expect(health.liveness().ok).toBe(true);
    health.connectionHealth('sink/enrich', { state: 'healthy' });
    expect(health.readiness()).toEqual({ ok: true, reasons: [] });
  });
});

describe('LagMonitor', () => {
  it('records each source samples and keeps going when one read fails (logged once)', async () => {
    const { logger, lines } = recording();
    const recorded: [string, number][] = [];
    let fail = true;
    const monitor = new LagMonitor({
      sources: [
        {
          route: 'a',
          lag: () => Promise.resolve([{ of: { topic: 't', partition: '0' }, lag: 4 }]),
        },
        {
          route: 'b',
          lag: () => (fail ? Promise.reject(new Error('down')) : Promise.resolve([])),
        },
      ],
      intervalMs: 60_000,
      record: (route, samples) => recorded.push([route, samples.length]),
      logger,
    });
    await monitor.poll();
    await monitor.poll();
    expect(recorded).toEqual([
      ['a', 1],
      ['a', 1],
    ]);
    expect(lines.filter((l) => l.message === 'reading consumer lag failed')).toHaveLength(1);
    fail = false;
    await monitor.poll();
    expect(recorded.at(-1)).toEqual(['b', 0]);
  });
});

describe('stats line', () => {
  it('logs per-route counters with the rate since the last line and readiness', () => {
    const { logger, lines } = recording();
    let now = 0;
    const counters = { r: { received: 10, written: 8, deadLettered: 2, retried: 0, truncated: 0 } };
    const line = statsLine({
      intervalMs: 1000,
      logger,
      counters: () => counters,
      readiness: () => ({ ok: false, reasons: ['draining for shutdown'] }),
      now: () => now,
    });
    now = 2000;
    line();
    expect(lines[0]?.message).toBe('stats');
    expect(lines[0]?.fields).toEqual({
      stats: {
        routes: {
          r: { received: 10, written: 8, deadLettered: 2, retried: 0, truncated: 0, perSecond: 5 },
        },
        ready: false,
        notReady: ['draining for shutdown'],
      },
    });
  });

  it('adds the percentage and the seconds left for a route whose source knows its total', () => {
    const { logger, lines } = recording();
    let now = 0;
    const counters = {
      file: { received: 30, written: 20, deadLettered: 5, retried: 0, truncated: 0, total: 100 },
      topic: { received: 4, written: 4, deadLettered: 0, retried: 0, truncated: 0 },
    };
    const line = statsLine({
      intervalMs: 1000,
      logger,
      counters: () => counters,
      readiness: () => ({ ok: true, reasons: [] }),
      now: () => now,
    });
    now = 5000;
    line();
    const { routes } = (lines[0]?.fields as { stats: { routes: Record<string, object> } }).stats;
    // 25 of 100 done in 5 s: 5/s, 75 left, 15 s.
    expect(routes['file']).toMatchObject({ total: 100, percent: 25, etaSeconds: 15, perSecond: 5 });
    expect(routes['topic']).not.toHaveProperty('percent');
    expect(routes['topic']).not.toHaveProperty('etaSeconds');
  });
});

describe('metered generation', () => {
  it('measures time to the first token and counts tokens when the request ends', async () => {
    let now = 100;
    const seen: string[] = [];
    const engine = {
      submit: (): AsyncIterable<GenerationEvent> => ({
        async *[Symbol.asyncIterator]() {
          await Promise.resolve();
          now = 350;
          yield { type: 'token', tokenId: 1, text: 'a' };
          now = 400;
          yield { type: 'token', tokenId: 2, text: 'b' };
        },
      }),
    };
    const metered = meteredGeneration(
      engine,
      {
        firstToken: (p, s) => seen.push(`ttft ${p} ${s}`),
        tokens: (p, n) => seen.push(`tokens ${p} ${n}`),
      },
      'chat',
      () => now,
    );
    const texts: string[] = [];
    for await (const event of metered.submit('hi', {}))
      if (event.type === 'token') texts.push(event.text);
    expect(texts).toEqual(['a', 'b']);
    expect(seen).toEqual(['ttft chat 0.25', 'tokens chat 2']);
  });
});

describe('childLogger', () => {
  it('adds its bindings to every line of a logger without child()', () => {
    const { logger, lines } = recording();
    childLogger(logger, { route: 'r', partition: 3 }).warn({ offset: '7' }, 'x');
    expect(lines[0]?.fields).toEqual({ route: 'r', partition: 3, offset: '7' });
    expect(childLogger(silentLogger, {})).toBeDefined();
  });
});
