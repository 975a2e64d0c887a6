// Score functions applied to logits. Python computes them in float32 with numpy; double precision
// here stays within 1e-6 of that.

export function softmax(values: ArrayLike<number>): number[] {
  let max = -Infinity;
  for (let i = 0; i < values.length; i += 1) max = Math.max(max, values[i] as number);
  const exps = Array.from(values, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((e) => e / sum);
}

export function sigmoid(value: number): number {
  return 1 / (1 + Math.exp(-value));
}

export function l2Normalize(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const v of vector) sum += v * v;
  // torch.nn.functional.normalize clamps the norm at 1e-12 so a zero vector stays zero.
  const norm = Math.max(Math.sqrt(sum), 1e-12);
  return vector.map((v) => v / norm);
}

/** Indices of the k largest values, largest first; ties keep the lower index first. */
export function topKIndices(values: ArrayLike<number>, k: number): number[] {
  const indices = Array.from({ length: values.length }, (_, i) => i);
  indices.sort((a, b) => (values[b] as number) - (values[a] as number) || a - b);
  return indices.slice(0, Math.max(0, k));
}
