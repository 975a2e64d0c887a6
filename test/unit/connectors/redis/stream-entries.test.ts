import { describe, expect, it } from 'vitest';
import { parseEntries } from '../../../../src/connectors/redis/stream-entries.ts';
import { envelopeOf } from '../../../../src/connectors/redis/bullmq-sink.ts';

const b = (s: string): Buffer => Buffer.from(s);

describe('stream entries', () => {
  it('reads value and key as bytes and every other field as a header', () => {
    const raw = Buffer.from([0xff, 0x00, 0x7b]);
    const [entry] = parseEntries([
      [b('s'), [[b('1-0'), [b('value'), raw, b('key'), b('k1'), b('trace'), b('t')]]]],
    ]);
    expect(entry?.id).toBe('1-0');
    expect(entry?.value?.equals(raw)).toBe(true);
    expect(entry?.key?.toString()).toBe('k1');
    expect(entry?.headers).toEqual({ trace: 't' });
  });

  it('maps header.value / header.key back to headers named value / key', () => {
    const [entry] = parseEntries([
      [
        b('s'),
        [[b('2-0'), [b('value'), b('{}'), b('header.value'), b('v'), b('header.key'), b('k')]]],
      ],
    ]);
    expect(entry?.headers).toEqual({ value: 'v', key: 'k' });
  });

  it('an entry deleted from the stream (no fields) has no value; an empty reply has no entries', () => {
    expect(parseEntries([[b('s'), [[b('3-0'), null]]]])).toEqual([
      { id: '3-0', value: null, key: null, headers: {} },
    ]);
    expect(parseEntries(null)).toEqual([]);
  });
});

describe('BullMQ dead-letter envelope', () => {
  it('keeps UTF-8 as text and anything else as base64', () => {
    const origin = { kind: 'bullmq', queue: 'q', jobId: '1' } as const;
    expect(envelopeOf({ key: null, value: b('{"a":1}'), headers: { h: 'x' }, origin })).toEqual({
      key: null,
      value: '{"a":1}',
      headers: { h: 'x' },
    });
    const bytes = Buffer.from([0xff, 0xfe]);
    expect(envelopeOf({ key: b('k'), value: bytes, headers: {}, origin })).toEqual({
      key: 'k',
      valueBase64: bytes.toString('base64'),
      headers: {},
    });
  });
});
