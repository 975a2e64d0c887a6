import { describe, expect, it } from 'vitest';
import { WriteAttempts } from '../../../../src/connectors/kafka/write-attempts.ts';

describe('WriteAttempts', () => {
  it('counts failures per record, not outages, until maxAttempts', () => {
    const attempts = new WriteAttempts(2);
    const outage = Object.assign(new Error('down'), { name: 'KafkaJSConnectionError' });
    expect(attempts.failed('t/0', '5', outage)).toEqual({ attempt: 0, transient: true });
    expect(attempts.failed('t/0', '5', new Error('refused'))).toEqual({
      attempt: 1,
      transient: false,
    });
    expect(attempts.exhausted('t/0', '5')).toBeUndefined();
    attempts.failed('t/0', '5', new Error('refused'));
    expect(attempts.exhausted('t/0', '5')).toEqual({ count: 2, reason: 'Error: refused' });
    expect(attempts.exhausted('t/0', '6')).toBeUndefined();
  });

  it('forgets a record once written and a partition once it is no longer assigned', () => {
    const attempts = new WriteAttempts(1);
    attempts.failed('t/0', '1', new Error('x'));
    attempts.failed('t/1', '1', new Error('x'));
    attempts.written('t/0', '1');
    expect(attempts.exhausted('t/0', '1')).toBeUndefined();
    attempts.keepOnly((key) => key !== 't/1');
    expect(attempts.exhausted('t/1', '1')).toBeUndefined();
  });
});
