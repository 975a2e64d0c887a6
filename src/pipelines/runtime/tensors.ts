// Building ONNX input tensors from tokenized text, and reading output tensors back.
import { Tensor } from '../../runtime/tensor.ts';
import { InferenceError } from '../../errors.ts';
import { floatData } from '../../runtime/half-float.ts';
import type { TokenizedText } from './text-tokenizer.ts';

import type { Feeds } from '../../runtime/session.ts';

export type { Feeds };

/**
 * Pads every encoding to the longest one and fills the inputs the model declares
 * (`input_ids`, `attention_mask`, `token_type_ids`). Padding is on the right, as Python pads
 * encoder batches. Only the declared inputs are read from the encodings (a field may be a lazy
 * read from the tokenizer).
 */
export function textFeeds(
  batch: readonly TokenizedText[],
  inputNames: readonly string[],
  padId: number,
): Feeds {
  const rows = batch.length;
  const width = batch.reduce((max, e) => Math.max(max, e.ids.length), 0);
  const dims = [rows, width];
  const tensor = (field: 'ids' | 'attentionMask' | 'typeIds', pad: number): Tensor => {
    const values = new BigInt64Array(rows * width).fill(BigInt(pad));
    batch.forEach((encoding, row) => {
      const source = encoding[field];
      const base = row * width;
      for (let i = 0; i < encoding.ids.length; i += 1) values[base + i] = BigInt(source[i] ?? pad);
    });
    return new Tensor('int64', values, dims);
  };
  const feeds: Feeds = {};
  for (const name of inputNames) {
    if (name === 'input_ids') feeds[name] = tensor('ids', padId);
    else if (name === 'attention_mask') feeds[name] = tensor('attentionMask', 0);
    else if (name === 'token_type_ids') feeds[name] = tensor('typeIds', 0);
  }
  return feeds;
}

/** A float output (float32, or float16 decoded to float32) as a flat array with its dimensions. */
export interface FloatOutput {
  data: Float32Array;
  dims: readonly number[];
}

export function floatOutput(outputs: Record<string, Tensor>, name: string): FloatOutput {
  const tensor = outputs[name];
  if (tensor === undefined) {
    throw new InferenceError(
      `the model has no output '${name}'; outputs: ${Object.keys(outputs).join(', ')}`,
    );
  }
  return { data: floatData(tensor, name), dims: tensor.dims };
}

/** Row `index` of the leading dimension, as a view (no copy). */
export function row(output: FloatOutput, index: number): Float32Array {
  const size = output.dims.slice(1).reduce((a, b) => a * b, 1);
  return output.data.subarray(index * size, (index + 1) * size);
}
