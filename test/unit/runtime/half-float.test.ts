// float16 outputs decoded to float32 (src/runtime/half-float.ts): every one of the 65,536 half
// values against the platform's own Float16Array, and both forms ONNX Runtime hands them in.
import { describe, expect, it } from 'vitest';
import { floatData, halfBitsToFloat32 } from '../../../src/runtime/half-float.ts';
import { InferenceError } from '../../../src/errors.ts';
import { Tensor } from '../../../src/runtime/tensor.ts';

const ALL = Uint16Array.from({ length: 1 << 16 }, (_, i) => i);

describe('halfBitsToFloat32', () => {
  it('decodes the landmarks of IEEE half precision', () => {
    const bits = Uint16Array.of(0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x8000, 0x7c00, 0xfc00);
    expect(Array.from(halfBitsToFloat32(bits))).toEqual([
      1,
      -2,
      65504,
      2 ** -24,
      2 ** -14,
      -0,
      Infinity,
      -Infinity,
    ]);
    expect(halfBitsToFloat32(Uint16Array.of(0x7e00))[0]).toBeNaN();
  });

  it('agrees with Float16Array on every half value', () => {
    const want = Float32Array.from(new Float16Array(ALL.buffer));
    const got = halfBitsToFloat32(ALL);
    const differing = [...got.keys()].filter(
      (i) => !Object.is(got[i], want[i]) && !(Number.isNaN(got[i]) && Number.isNaN(want[i])),
    );
    expect(differing).toEqual([]);
  });
});

describe('floatData', () => {
  const values = [0.5, -1.25, 3, 1024];
  const half = new Float16Array(values);
  it('reads float32 as it is, and float16 from half bits or from a Float16Array', () => {
    const f32 = new Float32Array(values);
    expect(floatData(new Tensor('float32', f32, [4]), 'x')).toBe(f32);
    const bits = new Uint16Array(half.buffer);
    const fromBits = { type: 'float16', data: bits, size: 4, dims: [4] } as unknown as Tensor;
    const fromHalf = { type: 'float16', data: half, size: 4, dims: [4] } as unknown as Tensor;
    expect(Array.from(floatData(fromBits, 'x'))).toEqual(values);
    expect(Array.from(floatData(fromHalf, 'x'))).toEqual(values);
  });

  it('names the output and its type when it is not a float', () => {
    const ints = new Tensor('int32', Int32Array.of(1, 2), [2]);
    expect(() => floatData(ints, 'logits')).toThrow(InferenceError);
    expect(() => floatData(ints, 'logits')).toThrow(
      "output 'logits' is int32, expected float32 or float16",
    );
  });
});
