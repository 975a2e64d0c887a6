// Feeds are written as 32-bit words on little-endian machines; every value must read back as the
// int64 a BigInt per value gives, padding and the rare value past 32 bits included.
import { describe, expect, it } from 'vitest';
import type { TokenizedText } from '../../../src/pipelines/runtime/text-tokenizer.ts';
import { textFeeds } from '../../../src/pipelines/runtime/tensors.ts';

function encoding(ids: number[], typeIds = ids.map(() => 0)): TokenizedText {
  return { ids, typeIds, attentionMask: ids.map(() => 1) } as TokenizedText;
}

function expected(rows: number[][], width: number, pad: number): bigint[] {
  return rows.flatMap((row) =>
    Array.from({ length: width }, (_, i) => BigInt(i < row.length ? (row[i] as number) : pad)),
  );
}

describe('textFeeds', () => {
  it('pads each row on the right with the pad id, mask 0 and type 0', () => {
    const ids = [
      [101, 7592, 102],
      [101, 2088, 2003, 4438, 102],
    ];
    const types = [
      [0, 0, 0],
      [0, 0, 1, 1, 1],
    ];
    const feeds = textFeeds(
      ids.map((row, r) => encoding(row, types[r])),
      ['input_ids', 'attention_mask', 'token_type_ids'],
      7,
    );
    expect(feeds['input_ids']?.dims).toEqual([2, 5]);
    expect(Array.from(feeds['input_ids']?.data as BigInt64Array)).toEqual(expected(ids, 5, 7));
    expect(Array.from(feeds['attention_mask']?.data as BigInt64Array)).toEqual(
      expected(
        ids.map((row) => row.map(() => 1)),
        5,
        0,
      ),
    );
    expect(Array.from(feeds['token_type_ids']?.data as BigInt64Array)).toEqual(
      expected(types, 5, 0),
    );
  });

  it('keeps negative values and values past 32 bits exact', () => {
    const row = [-1, -(2 ** 31), 2 ** 31 - 1, 2 ** 31, 2 ** 40 + 3, -(2 ** 33)];
    const feeds = textFeeds([encoding(row)], ['input_ids'], 0);
    expect(Array.from(feeds['input_ids']?.data as BigInt64Array)).toEqual(row.map(BigInt));
  });

  it('fills only the inputs the model declares', () => {
    const feeds = textFeeds([encoding([101, 102])], ['input_ids', 'attention_mask'], 0);
    expect(Object.keys(feeds)).toEqual(['input_ids', 'attention_mask']);
  });
});
