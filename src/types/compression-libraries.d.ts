// Types for the two pure-JS compression libraries, which ship none. Only what compression-codecs.ts calls.
declare module 'lz4js' {
  export function compressBound(length: number): number;
  export function compressBlock(
    src: Uint8Array,
    dst: Uint8Array,
    srcIndex: number,
    srcLength: number,
    hashTable: Uint32Array,
  ): number;
  /** Decompresses a whole LZ4 frame. */
  export function decompress(src: Uint8Array, maxSize?: number): Uint8Array;
}

declare module 'lz4js/xxh32.js' {
  const xxh32: { hash(seed: number, src: Uint8Array, index: number, length: number): number };
  export default xxh32;
}

declare module 'snappyjs' {
  /** One raw snappy block. */
  export function compress(input: Uint8Array): Uint8Array;
  export function uncompress(input: Uint8Array, maxLength?: number): Uint8Array;
}
