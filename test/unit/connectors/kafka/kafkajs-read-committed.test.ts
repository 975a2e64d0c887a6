// The read_committed filter that replaces kafkajs' own (src/connectors/kafka/kafkajs-read-committed.ts):
// the broker lists aborted transactions in the order they ended, and kafkajs' filter, reading only
// the head of that list, delivered records of a transaction that started earlier.
import { describe, expect, it } from 'vitest';
import {
  readCommittedFilterActive,
  withoutAborted,
  type FilterableMessage,
} from '../../../../src/connectors/kafka/kafkajs-read-committed.ts';

const ABORT = Buffer.from([0, 0, 0, 0]);
const COMMIT = Buffer.from([0, 0, 0, 1]);

function record(offset: number, producerId: number, inTransaction = true): FilterableMessage {
  return { offset: String(offset), key: null, batchContext: { producerId, inTransaction } };
}

function marker(offset: number, producerId: number, key: Buffer): FilterableMessage {
  return {
    offset: String(offset),
    key,
    isControlRecord: true,
    batchContext: { producerId, inTransaction: true },
  };
}

const offsets = (messages: FilterableMessage[]): number[] =>
  messages.filter((m) => m.isControlRecord !== true).map((m) => Number(m.offset));

describe('read_committed filter for kafkajs', () => {
  it('is installed before kafkajs loads', () => {
    expect(readCommittedFilterActive).toBe(true);
  });

  it('drops a transaction that started before the first one listed (list in end order)', () => {
    // Producer 7 starts at 0, producer 8 at 1; 8 aborts first (marker 3), then 7 (marker 5).
    const messages = [
      record(0, 7),
      record(1, 8),
      record(2, 7),
      marker(3, 8, ABORT),
      record(4, 7),
      marker(5, 7, ABORT),
      record(6, 9, false),
    ];
    const aborted = [
      { producerId: '8', firstOffset: '1' },
      { producerId: '7', firstOffset: '0' },
    ];
    expect(offsets(withoutAborted(messages, aborted))).toEqual([6]);
  });

  it('drops every aborted transaction already open where the fetch starts', () => {
    // A fetch from offset 10 inside two aborted transactions (first offsets 2 and 4).
    const messages = [record(10, 1), record(11, 2), marker(12, 2, ABORT), record(13, 1)];
    const aborted = [
      { producerId: '1', firstOffset: '2' },
      { producerId: '2', firstOffset: '4' },
    ];
    expect(offsets(withoutAborted(messages, aborted))).toEqual([]);
  });

  it('keeps committed transactions of the same producer after its aborted one', () => {
    const messages = [
      record(0, 5),
      marker(1, 5, COMMIT),
      record(2, 5),
      marker(3, 5, ABORT),
      record(4, 5),
      marker(5, 5, COMMIT),
    ];
    expect(offsets(withoutAborted(messages, [{ producerId: '5', firstOffset: '2' }]))).toEqual([
      0, 4,
    ]);
  });

  it('keeps everything when nothing was aborted', () => {
    const messages = [record(0, 1), marker(1, 1, COMMIT)];
    expect(withoutAborted(messages, [])).toBe(messages);
    expect(withoutAborted(messages, undefined)).toBe(messages);
  });
});
