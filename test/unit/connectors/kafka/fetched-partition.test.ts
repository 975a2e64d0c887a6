// A raw fetched partition (@platformatic/kafka) as the records the Kafka source may take: aborted
// transactions filtered the Java consumer's way (the client's own filter misses a producer's
// earlier aborted transaction in the same response), markers dropped, records before the
// position dropped, and the end offset that steps over trailing markers.
import { describe, expect, it } from 'vitest';
import type { RecordsBatch } from '@platformatic/kafka';
import { fetchedPartition } from '../../../../src/connectors/kafka/fetched-partition.ts';

const TRANSACTIONAL = 0x10;
const CONTROL = 0x20;
const ABORT = Buffer.from([0, 0, 0, 0]);
const COMMIT = Buffer.from([0, 0, 0, 1]);

function batch(
  firstOffset: number,
  count: number,
  producerId: number,
  attributes = 0,
): RecordsBatch {
  return {
    firstOffset: BigInt(firstOffset),
    lastOffsetDelta: count - 1,
    producerId: BigInt(producerId),
    attributes,
    records: Array.from({ length: count }, (_, i) => ({
      offsetDelta: i,
      key: null,
      value: Buffer.from(`v${firstOffset + i}`),
      headers: [],
    })),
  } as unknown as RecordsBatch;
}

function marker(offset: number, producerId: number, key: Buffer): RecordsBatch {
  const b = batch(offset, 1, producerId, TRANSACTIONAL | CONTROL);
  (b.records[0] as { key: Buffer | null }).key = key;
  return b;
}

const offsets = (r: ReturnType<typeof fetchedPartition>): string[] =>
  r.messages.map((m) => m.offset);

describe('fetched partition', () => {
  it('drops every aborted transaction of one producer, keeps its committed one between them', () => {
    // Producer 7: aborted [0,1] marker 2, committed [3,4] marker 5, aborted [6,7] marker 8.
    const records = [
      batch(0, 2, 7, TRANSACTIONAL),
      marker(2, 7, ABORT),
      batch(3, 2, 7, TRANSACTIONAL),
      marker(5, 7, COMMIT),
      batch(6, 2, 7, TRANSACTIONAL),
      marker(8, 7, ABORT),
      batch(9, 1, 0),
    ];
    const aborted = [
      { producerId: 7n, firstOffset: 6n },
      { producerId: 7n, firstOffset: 0n },
    ];
    const fetched = fetchedPartition(
      { records, abortedTransactions: aborted, highWatermark: 10n },
      0n,
      true,
    );
    expect(offsets(fetched)).toEqual(['3', '4', '9']);
    expect(fetched.end).toBe(10n);
    expect(fetched.highWatermark).toBe(10n);
  });

  it('an aborted transaction whose marker is beyond the response is still dropped', () => {
    const records = [batch(0, 1, 0), batch(1, 3, 9, TRANSACTIONAL)];
    const fetched = fetchedPartition(
      { records, abortedTransactions: [{ producerId: 9n, firstOffset: 1n }], highWatermark: 8n },
      0n,
      true,
    );
    expect(offsets(fetched)).toEqual(['0']);
    expect(fetched.end).toBe(4n);
  });

  it('read_uncommitted keeps transactional records; markers and records before the position go', () => {
    const records = [batch(0, 3, 4, TRANSACTIONAL), marker(3, 4, ABORT)];
    const fetched = fetchedPartition(
      { records, abortedTransactions: [{ producerId: 4n, firstOffset: 0n }], highWatermark: 4n },
      1n,
      false,
    );
    expect(offsets(fetched)).toEqual(['1', '2']);
    expect(fetched.end).toBe(4n);
  });

  it('keeps header bytes, a repeated name as an array in order', () => {
    const b = batch(0, 1, 0);
    (b.records[0] as { headers: [Buffer, Buffer][] }).headers = [
      [Buffer.from('a'), Buffer.from('1')],
      [Buffer.from('b'), Buffer.from('2')],
      [Buffer.from('a'), Buffer.from('3')],
    ];
    const fetched = fetchedPartition(
      { records: [b], abortedTransactions: null, highWatermark: 1n },
      0n,
      true,
    );
    expect(fetched.messages[0]?.headers).toEqual({
      a: [Buffer.from('1'), Buffer.from('3')],
      b: Buffer.from('2'),
    });
  });
});
