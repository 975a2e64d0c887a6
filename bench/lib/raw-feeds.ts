// Feeds for the raw contender from bare id rows: right padding with id 0 ([PAD] in both BERT
// vocabularies used here), mask 1 over the real tokens, segment 0.
import { Tensor } from 'onnxruntime-node';

export function idsFeeds(
  batch: readonly number[][],
  inputNames: readonly string[],
): Record<string, Tensor> {
  const rows = batch.length;
  const width = batch.reduce((max, ids) => Math.max(max, ids.length), 0);
  const ids = new BigInt64Array(rows * width);
  const mask = new BigInt64Array(rows * width);
  batch.forEach((row, r) => {
    for (let i = 0; i < row.length; i += 1) {
      ids[r * width + i] = BigInt(row[i] ?? 0);
      mask[r * width + i] = 1n;
    }
  });
  const dims = [rows, width];
  const feeds: Record<string, Tensor> = {};
  for (const name of inputNames) {
    if (name === 'input_ids') feeds[name] = new Tensor('int64', ids, dims);
    else if (name === 'attention_mask') feeds[name] = new Tensor('int64', mask, dims);
    else if (name === 'token_type_ids')
      feeds[name] = new Tensor('int64', new BigInt64Array(rows * width), dims);
  }
  return feeds;
}
