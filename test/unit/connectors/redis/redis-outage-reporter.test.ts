import { EventEmitter } from 'node:events';
import type { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import type { ConnectionHealth } from '../../../../src/connectors/connection-health.ts';
import { reportRedisOutages } from '../../../../src/connectors/redis/redis-outage-reporter.ts';
import { withTraceContext } from '../../../../src/connectors/redis/bullmq-sink.ts';

function fakeConnection(): EventEmitter & Redis {
  // Only on/off/emit are used by the reporter.
  return new EventEmitter() as EventEmitter & Redis;
}

describe('reportRedisOutages', () => {
  it('degraded on each reconnect with attempt and outage length, healthy once ready', () => {
    const connection = fakeConnection();
    const reports: ConnectionHealth[] = [];
    let clock = 1_000;
    let stopping = false;
    const stop = reportRedisOutages(connection, {
      reason: 'Redis unreachable (BullMQ queue q)',
      onHealth: (h) => reports.push(h),
      stopping: () => stopping,
      now: () => clock,
    });
    connection.emit('ready'); // the first connect is no recovery
    connection.emit('reconnecting');
    clock += 1_500;
    connection.emit('reconnecting');
    connection.emit('ready');
    clock += 100;
    connection.emit('reconnecting');
    expect(reports).toEqual([
      { state: 'degraded', reason: 'Redis unreachable (BullMQ queue q)', attempt: 1, sinceMs: 0 },
      {
        state: 'degraded',
        reason: 'Redis unreachable (BullMQ queue q)',
        attempt: 2,
        sinceMs: 1500,
      },
      { state: 'healthy' },
      { state: 'degraded', reason: 'Redis unreachable (BullMQ queue q)', attempt: 1, sinceMs: 0 },
    ]);
    stopping = true;
    connection.emit('reconnecting');
    expect(reports).toHaveLength(4);
    stop();
    stopping = false;
    connection.emit('reconnecting');
    expect(reports).toHaveLength(4);
    expect(connection.listenerCount('reconnecting')).toBe(0);
  });
});

describe('withTraceContext (BullMQ output jobs)', () => {
  const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
  it('adds traceparent and tracestate from the headers to an output object', () => {
    expect(
      withTraceContext(
        { id: 'a', result: [1], traceparent: 'old' },
        { traceparent: Buffer.from(traceparent), tracestate: 'k=v', other: 'x' },
      ),
    ).toEqual({ id: 'a', result: [1], traceparent, tracestate: 'k=v' });
  });
  it('leaves other JSON values and untraced records alone', () => {
    expect(withTraceContext([1, 2], { traceparent })).toEqual([1, 2]);
    expect(withTraceContext('text', { traceparent })).toBe('text');
    expect(withTraceContext(null, { traceparent })).toBeNull();
    const data = { id: 'a' };
    expect(withTraceContext(data, { other: 'x' })).toBe(data);
  });
});
