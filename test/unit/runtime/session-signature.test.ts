// The checks every native run passes before ONNX Runtime is called, on a declared signature alone:
// the linked inputs of a two-session run, the name pointers Run takes, and the fetches.
import { Tensor } from '../../../src/runtime/tensor.ts';
import { describe, expect, it } from 'vitest';
import { FeedMismatchError } from '../../../src/errors.ts';
import { SessionSignature } from '../../../src/runtime/native/session-signature.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const signature = new SessionSignature(
  'models/pair.onnx',
  [
    { pointer: 11n, meta: { name: 'ids', isTensor: true, type: 'int64', shape: ['batch', 4] } },
    { pointer: 12n, meta: { name: 'hidden', isTensor: true, type: 'float32', shape: [] } },
  ],
  [
    {
      pointer: 21n,
      meta: { name: 'logits', isTensor: true, type: 'float32', shape: ['batch', 2] },
    },
  ],
);
const ids = new Tensor('int64', new BigInt64Array(8), [2, 4]);
const hidden = new Tensor('float32', new Float32Array(3), [3]);

function thrown(run: () => unknown): FeedMismatchError {
  return thrownBy(FeedMismatchError, run);
}

describe('SessionSignature', () => {
  it('gives each feed with the pointer of its declared name, in the order fed', () => {
    expect(signature.feeds({ hidden, ids }).map(([name, pointer]) => [name, pointer])).toEqual([
      ['hidden', 12n],
      ['ids', 11n],
    ]);
    expect(signature.inputNames).toEqual(['ids', 'hidden']);
    expect(signature.outputPointer('logits')).toBe(21n);
  });

  it('counts a linked input as fed, and refuses a link to an input the model lacks', () => {
    expect(signature.feeds({ ids }, new Set(['hidden']))).toHaveLength(1);
    const err = thrown(() => signature.feeds({ ids, hidden }, new Set(['state'])));
    expect(err.field).toBe('state');
    expect(err.message).toBe(
      "models/pair.onnx: tensor 'state' is not an input of the model; inputs: ids, hidden",
    );
  });

  it('names the first missing input, a wrong fixed dimension and an unknown fetch', () => {
    expect(thrown(() => signature.feeds({ ids })).message).toMatch(
      /'hidden' is missing from the feeds \(missing: hidden\)/,
    );
    const short = new Tensor('int64', new BigInt64Array(6), [2, 3]);
    expect(thrown(() => signature.feeds({ ids: short, hidden })).message).toMatch(
      /'ids' has dimension 1 = 3, the model takes 4/,
    );
    expect(signature.fetches(['logits'])).toEqual(['logits']);
    expect(thrown(() => signature.fetches(['logits', 'pooled'])).field).toBe('pooled');
  });
});
