import { describe, expect, it } from 'vitest';
import { recordBytes } from '../../../src/route/sink.ts';
import { deadLetter, DLQ_HEADER_PREFIX, fitDeadLetter } from '../../../src/route/dead-letter.ts';
import type { SourceRecord } from '../../../src/route/record.ts';

function source(valueBytes: number, headerBytes: number): SourceRecord {
  return {
    key: Buffer.from('k'),
    value: Buffer.alloc(valueBytes, 0x61),
    headers: { trace: 'x'.repeat(headerBytes), tenant: 'acme' },
    origin: { kind: 'kafka', topic: 'in', partition: 3, offset: '42' },
  };
}

describe('fitDeadLetter', () => {
  const message = 'the output is too large; '.repeat(60);

  it('leaves a dead letter that fits untouched', () => {
    const dead = deadLetter(source(100, 10), 'sink', 'OUTPUT_TOO_LARGE', message);
    expect(fitDeadLetter(dead, 1_048_576)).toBe(dead);
    expect(fitDeadLetter(dead, undefined)).toBe(dead);
  });

  it('shortens the message first, keeping the value and the original headers', () => {
    const dead = deadLetter(source(4000, 10), 'sink', 'OUTPUT_TOO_LARGE', message);
    const limit = recordBytes(dead) - 500;
    const fitted = fitDeadLetter(dead, limit);
    expect(recordBytes(fitted)).toBeLessThanOrEqual(limit);
    expect(fitted.value.equals(dead.value)).toBe(true);
    expect(fitted.headers['tenant']).toBe('acme');
    expect(String(fitted.headers[`${DLQ_HEADER_PREFIX}message`])).toHaveLength(200);
  });

  it('drops the original headers, then the value, never the origin', () => {
    const big = deadLetter(source(4000, 3000), 'sink', 'OUTPUT_TOO_LARGE', message);
    const noHeaders = fitDeadLetter(big, 4000 + 900);
    expect(recordBytes(noHeaders)).toBeLessThanOrEqual(4000 + 900);
    expect(noHeaders.value.length).toBe(4000);
    expect(noHeaders.headers['trace']).toBeUndefined();
    expect(noHeaders.headers[`${DLQ_HEADER_PREFIX}headers.dropped`]).toBe('2');

    const tiny = fitDeadLetter(big, 1024);
    expect(recordBytes(tiny)).toBeLessThanOrEqual(1024);
    expect(tiny.value.length).toBe(0);
    expect(tiny.headers[`${DLQ_HEADER_PREFIX}value.dropped.bytes`]).toBe('4000');
    expect(tiny.headers[`${DLQ_HEADER_PREFIX}origin.offset`]).toBe('42');
    expect(tiny.headers[`${DLQ_HEADER_PREFIX}origin.topic`]).toBe('in');
    expect(tiny.headers[`${DLQ_HEADER_PREFIX}code`]).toBe('OUTPUT_TOO_LARGE');
  });
});
