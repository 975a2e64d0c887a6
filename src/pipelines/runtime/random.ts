// A small seeded generator so that sampling is reproducible: the same seed gives the same tokens on
// every machine and thread. (torch's generator cannot be reproduced outside torch, so sampled
// tokens are not expected to equal Python's; greedy decoding is.)

/** Uniform numbers in [0, 1) from xoshiro128**, seeded through splitmix32. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  const split = (): number => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  return () => {
    const result = Math.imul(rotl(Math.imul(b, 5) >>> 0, 7), 9) >>> 0;
    const t = (b << 9) >>> 0;
    c ^= a;
    d ^= b;
    b ^= c;
    a ^= d;
    c ^= t;
    d = rotl(d, 11);
    return result / 2 ** 32;
  };
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

/** A seed for requests that give none: different per call, so unseeded sampling varies. */
export function randomSeed(): number {
  return Math.floor(Math.random() * 2 ** 32);
}
