// kafkajs' request queue, as the clients use it, with the throttle check replaced: an idle queue
// arms no check at all (kafkajs' own re-armed a 1 ms one forever, with Node 24's
// TimeoutNegativeWarning), a pending one after kafkajs' own 10 ms, a throttled one when the
// throttle ends.
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clampKafkajsThrottleCheck } from '../../../../src/connectors/kafka/kafkajs-negative-timeout.ts';

interface Queue {
  throttledUntil: number;
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  checkPendingRequests(): void;
  scheduleCheckPendingRequests(): void;
}

const RequestQueue = createRequire(import.meta.url)(
  'kafkajs/src/network/requestQueue/index.js',
) as {
  prototype: Queue;
};

/** A queue object with kafkajs' method, without a broker connection behind it. */
function queue(state: Partial<Queue>): Queue & { checks: number } {
  const q = Object.create(RequestQueue.prototype) as Queue & { checks: number };
  Object.assign(q, { throttledUntil: -1, pending: [], throttleCheckTimeoutId: null, checks: 0 });
  q.checkPendingRequests = () => {
    q.checks += 1;
  };
  return Object.assign(q, state);
}

afterEach(() => {
  vi.useRealTimers();
});

describe("kafkajs' throttle check, clamped", () => {
  it('is installed on the prototype kafkajs instantiates', () => {
    expect(clampKafkajsThrottleCheck()).toBe(true);
    expect(RequestQueue.prototype.scheduleCheckPendingRequests.name).toBe(
      'scheduleCheckPendingRequests',
    );
    expect(RequestQueue.prototype.scheduleCheckPendingRequests.toString()).toContain('Math.max');
  });

  it('an idle queue arms nothing, and prints no TimeoutNegativeWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const q = queue({});
      q.scheduleCheckPendingRequests();
      expect(q.throttleCheckTimeoutId).toBeNull();
      await sleep(50);
      expect(q.checks).toBe(0);
      expect(warnings).not.toContain('TimeoutNegativeWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('a real queue answered with nothing waiting stops: no wake-up loop', () => {
    vi.useFakeTimers();
    const Constructor = RequestQueue as unknown as new (options: object) => Queue & {
      fulfillRequest(response: { correlationId: number; payload: Buffer; size: number }): void;
    };
    const quiet = (): void => undefined;
    const real = new Constructor({
      maxInFlightRequests: null,
      requestTimeout: 30_000,
      enforceRequestTimeout: false,
      clientId: 'test',
      broker: 'localhost:9092',
      logger: { debug: quiet, info: quiet, warn: quiet, error: quiet },
      isConnected: () => true,
    });
    const checks = vi.spyOn(real, 'checkPendingRequests');
    // What the connection does with every answer: kafkajs' check, which schedules the next one.
    real.fulfillRequest({ correlationId: 1, payload: Buffer.alloc(0), size: 0 });
    vi.advanceTimersByTime(1_000);
    // kafkajs' own method ran the check about once a millisecond here, for as long as it lived.
    expect(checks).toHaveBeenCalledTimes(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a throttle with nothing waiting still gets its one check when it ends', () => {
    vi.useFakeTimers();
    const throttled = queue({ throttledUntil: Date.now() + 100 });
    throttled.scheduleCheckPendingRequests();
    vi.advanceTimersByTime(100);
    expect(throttled.checks).toBe(1);
  });

  it('pending requests: after 10 ms; throttled: when the throttle ends; armed once', () => {
    vi.useFakeTimers();
    const pending = queue({ pending: [{}] });
    pending.scheduleCheckPendingRequests();
    pending.scheduleCheckPendingRequests();
    vi.advanceTimersByTime(9);
    expect(pending.checks).toBe(0);
    vi.advanceTimersByTime(1);
    expect(pending.checks).toBe(1);

    const throttled = queue({ pending: [{}], throttledUntil: Date.now() + 250 });
    throttled.scheduleCheckPendingRequests();
    vi.advanceTimersByTime(249);
    expect(throttled.checks).toBe(0);
    vi.advanceTimersByTime(1);
    expect(throttled.checks).toBe(1);
  });
});
