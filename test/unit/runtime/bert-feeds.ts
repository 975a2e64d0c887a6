// The BERT fixture's model file, and feeds for its session: the ids, a mask of ones and zero token
// types.
import { join } from 'node:path';
import type { OrtSession } from '../../../src/runtime/session.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';

export const BERT_FIXTURE = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'bert-text-classification',
  'model.onnx',
);

export function bertFeeds(session: OrtSession, ids: number[]): Record<string, Tensor> {
  const dims = [1, ids.length];
  const feeds: Record<string, Tensor> = {};
  for (const name of session.inputNames) {
    const values =
      name === 'input_ids'
        ? BigInt64Array.from(ids, BigInt)
        : name === 'attention_mask'
          ? new BigInt64Array(ids.length).fill(1n)
          : new BigInt64Array(ids.length);
    feeds[name] = new Tensor('int64', values, dims);
  }
  return feeds;
}
