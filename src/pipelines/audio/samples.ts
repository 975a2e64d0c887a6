// Waveform pieces put back together: streamed speech comes in pieces that add up to the whole.

/** The pieces one after the other (the piece itself when there is one). */
export function concatSamples(parts: readonly Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0] as Float32Array;
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
