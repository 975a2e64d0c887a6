// Compact vectors against numpy: a real MiniLM embedding encoded by scripts/models/vector_encodings.py
// (astype('<f2'), np.packbits(v > 0), ...) must come out of encodeVector byte for byte, and each form
// must decode back to the float vector within what it keeps.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  encodeVector,
  truncateVector,
  type Int8Vector,
  type VectorEncoding,
} from '../../../src/route/vector-encoding.ts';

interface Forms {
  'base64-f32': string;
  'base64-f16': string;
  int8: Int8Vector;
  binary: string;
}
interface Fixture {
  vector: number[];
  encodings: Forms;
  dimensions: Record<string, { vector: number[]; encodings: Forms }>;
}

const fixture = JSON.parse(
  readFileSync(
    join(import.meta.dirname, '..', '..', 'fixtures', 'vectors', 'encodings.json'),
    'utf8',
  ),
) as Fixture;
const vector = Float32Array.from(fixture.vector);
const encode = (encoding: VectorEncoding, v = vector, dimensions?: number) =>
  encodeVector(v, { encoding, ...(dimensions !== undefined ? { dimensions } : {}) });

const bytesOf = (b64: string): Buffer => Buffer.from(b64, 'base64');

function decodeF32(b64: string): Float32Array {
  const bytes = bytesOf(b64);
  return Float32Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

/** IEEE half to a number, written out here so that the check does not lean on the encoder's runtime. */
function decodeF16(b64: string): number[] {
  const bytes = bytesOf(b64);
  return Array.from({ length: bytes.length / 2 }, (_, i) => {
    const h = bytes.readUInt16LE(i * 2);
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const fraction = h & 0x3ff;
    if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
    if (exponent === 31) return fraction === 0 ? sign * Infinity : NaN;
    return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
  });
}

function decodeBits(b64: string, length: number): boolean[] {
  const bytes = bytesOf(b64);
  return Array.from({ length }, (_, i) => (((bytes[i >> 3] ?? 0) >> (7 - (i & 7))) & 1) === 1);
}

const norm = (v: ArrayLike<number>): number =>
  Math.sqrt(Array.from(v).reduce((sum, x) => sum + x * x, 0));
const cosine = (a: ArrayLike<number>, b: ArrayLike<number>): number =>
  Array.from(a).reduce((sum, x, i) => sum + x * (b[i] as number), 0) / (norm(a) * norm(b));

describe('vector encodings against numpy', () => {
  it('writes json as the float values themselves', () => {
    expect(encode('json').json).toEqual(Array.from(vector));
  });

  it("writes base64-f32 as numpy's little-endian float32 bytes, decoding to the exact vector", () => {
    const { json, bytes } = encode('base64-f32');
    expect(json).toBe(fixture.encodings['base64-f32']);
    expect(Buffer.from(bytes).toString('base64')).toBe(json);
    expect(decodeF32(json as string)).toEqual(vector);
  });

  it("writes base64-f16 as numpy's astype('<f2') (round to nearest even), within half precision", () => {
    const { json, bytes } = encode('base64-f16');
    expect(json).toBe(fixture.encodings['base64-f16']);
    expect(bytes.length).toBe(vector.length * 2);
    decodeF16(json as string).forEach((x, i) => {
      const v = vector[i] as number;
      // Half keeps 11 significant bits: rounding moves a normal value by at most 2^-11 of itself,
      // a subnormal one by at most half its spacing, 2^-25.
      expect(Math.abs(x - v)).toBeLessThanOrEqual(Math.max(Math.abs(v) * 2 ** -11, 2 ** -25));
    });
  });

  it('writes int8 as numpy rounds v * 127 / max|v|, with the scale that decodes it within scale / 2', () => {
    const { json, bytes } = encode('int8');
    const { int8, scale } = json as Int8Vector;
    expect(int8).toEqual(fixture.encodings.int8.int8);
    expect(scale).toBeCloseTo(fixture.encodings.int8.scale, 15);
    expect(Math.max(...int8.map(Math.abs))).toBe(127);
    expect(Array.from(new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length))).toEqual(int8);
    int8.forEach((q, i) => {
      expect(Math.abs(q * scale - (vector[i] as number))).toBeLessThanOrEqual(scale / 2 + 1e-12);
    });
  });

  it("writes binary as numpy's packbits(v > 0), most significant bit first, every sign kept", () => {
    const { json, bytes } = encode('binary');
    expect(json).toBe(fixture.encodings.binary);
    expect(bytes.length).toBe(Math.ceil(vector.length / 8));
    expect(decodeBits(json as string, vector.length)).toEqual(Array.from(vector, (x) => x > 0));
  });

  it('pads the last byte of a binary vector with zeros and gives a zero vector an int8 scale of 0', () => {
    const { bytes } = encode('binary', Float32Array.from([1, -1, 0, 2, 3, -4, 5, 6, 7, -8]));
    expect(Array.from(bytes)).toEqual([0b10011011, 0b10000000]);
    expect(encode('int8', new Float32Array(3)).json).toEqual({ int8: [0, 0, 0], scale: 0 });
  });
});

describe('Matryoshka dimensions', () => {
  for (const [n, expected] of Object.entries(fixture.dimensions)) {
    const dimensions = Number(n);
    it(`keeps the first ${n} values of a normalised embedding, renormalised as numpy does, in every encoding`, () => {
      const cut = truncateVector(vector, dimensions);
      expect(cut.length).toBe(dimensions);
      expect(norm(cut)).toBeCloseTo(1, 6);
      expect(cosine(cut, expected.vector)).toBeCloseTo(1, 6);
      expect(cosine(cut, vector.subarray(0, dimensions))).toBeCloseTo(1, 6);
      const f32 = decodeF32(encode('base64-f32', vector, dimensions).json as string);
      f32.forEach((x, i) => expect(x).toBeCloseTo(expected.vector[i] as number, 6));
      expect(encode('binary', vector, dimensions).json).toBe(expected.encodings.binary);
      expect((encode('int8', vector, dimensions).json as Int8Vector).int8.length).toBe(dimensions);
    });
  }

  it('cuts a vector that was not normalised without rescaling it, and keeps a whole one whole', () => {
    const raw = vector.map((x) => x * 3);
    expect(norm(raw)).toBeGreaterThan(2);
    expect(truncateVector(raw, 64)).toEqual(raw.slice(0, 64));
    expect(truncateVector(vector, vector.length)).toEqual(vector);
  });
});
