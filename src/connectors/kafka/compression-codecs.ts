// Codecs for every compression type a Kafka record batch can carry. kafkajs ships gzip only and
// throws on the others, which crashes the consumer at the first compressed batch, so a topic
// written by a Java producer with compression.type=zstd|snappy|lz4 would stop the route.
// - zstd: plain zstd frames (Node 24's zlib).
// - snappy: the Java client writes snappy-java's stream framing ("xerial": a magic header, then
//   length-prefixed raw snappy blocks); librdkafka and older kafkajs codecs write one raw
//   block. Reading accepts both; writing uses the xerial framing, which every client reads.
// - lz4: the LZ4 frame format (Kafka's KafkaLZ4BlockOutputStream), with independent blocks,
//   because the Java reader decompresses every block on its own.
// Before kafkajs: its read_committed filter is replaced as it loads. The throttle-check clamp
// (no TimeoutNegativeWarning on Node 24) goes with it: every kafkajs user imports this module.
import './kafkajs-read-committed.ts';
import './kafkajs-negative-timeout.ts';
import { promisify } from 'node:util';
import { zstdCompress, zstdDecompress } from 'node:zlib';
// A default import: Node's CommonJS export scan does not see these two names in kafkajs' index.
import kafkajs from 'kafkajs';
import * as lz4 from 'lz4js';
import xxh32 from 'lz4js/xxh32.js';
import * as snappy from 'snappyjs';

const zstdCompressAsync = promisify(zstdCompress);
const zstdDecompressAsync = promisify(zstdDecompress);

export interface Codec {
  compress(input: Buffer): Promise<Buffer>;
  decompress(input: Buffer): Promise<Buffer>;
}

export const zstdCodec: Codec = {
  compress: (input) => zstdCompressAsync(input),
  decompress: (input) => zstdDecompressAsync(input),
};

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = XERIAL_MAGIC.length + 8;
/** snappy-java's default block size. */
const SNAPPY_BLOCK_BYTES = 32 * 1024;

export const snappyCodec: Codec = {
  compress: (input) => Promise.resolve(snappyXerialCompress(input)),
  decompress: (input) => Promise.resolve(snappyDecompress(input)),
};

export function snappyXerialCompress(input: Buffer): Buffer {
  const header = Buffer.alloc(XERIAL_HEADER_BYTES);
  XERIAL_MAGIC.copy(header);
  header.writeInt32BE(1, XERIAL_MAGIC.length); // version
  header.writeInt32BE(1, XERIAL_MAGIC.length + 4); // oldest compatible version
  const parts: Buffer[] = [header];
  for (let at = 0; at < input.length; at += SNAPPY_BLOCK_BYTES) {
    const block = Buffer.from(snappy.compress(input.subarray(at, at + SNAPPY_BLOCK_BYTES)));
    const length = Buffer.alloc(4);
    length.writeInt32BE(block.length);
    parts.push(length, block);
  }
  return Buffer.concat(parts);
}

export function snappyDecompress(input: Buffer): Buffer {
  if (!isXerial(input)) return Buffer.from(snappy.uncompress(input));
  const parts: Buffer[] = [];
  let at = XERIAL_HEADER_BYTES;
  while (at < input.length) {
    if (at + 4 > input.length) throw new Error('snappy: truncated xerial block length');
    const length = input.readInt32BE(at);
    at += 4;
    if (length < 0 || at + length > input.length) throw new Error('snappy: truncated xerial block');
    parts.push(Buffer.from(snappy.uncompress(input.subarray(at, at + length))));
    at += length;
  }
  return Buffer.concat(parts);
}

function isXerial(input: Buffer): boolean {
  return (
    input.length >= XERIAL_HEADER_BYTES &&
    input.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)
  );
}

const LZ4_MAGIC = 0x184d2204;
/** 64 KiB blocks (block-size id 4), as the Java client writes them. */
const LZ4_BLOCK_BYTES = 64 * 1024;
const LZ4_BLOCK_SIZE_ID = 4;
const LZ4_FLG_VERSION_1 = 0x40;
const LZ4_FLG_INDEPENDENT_BLOCKS = 0x20;
const LZ4_UNCOMPRESSED_BIT = 0x80000000;

export const lz4Codec: Codec = {
  compress: (input) => Promise.resolve(lz4FrameCompress(input)),
  decompress: (input) => Promise.resolve(Buffer.from(lz4.decompress(input))),
};

export function lz4FrameCompress(input: Buffer): Buffer {
  const header = Buffer.alloc(7);
  header.writeUInt32LE(LZ4_MAGIC, 0);
  header[4] = LZ4_FLG_VERSION_1 | LZ4_FLG_INDEPENDENT_BLOCKS;
  header[5] = LZ4_BLOCK_SIZE_ID << 4;
  // Header checksum: the second byte of xxh32 (seed 0) over the descriptor (FLG and BD).
  header[6] = (xxh32.hash(0, header, 4, 2) >>> 8) & 0xff;
  const parts: Buffer[] = [header];
  const scratch = Buffer.alloc(lz4.compressBound(LZ4_BLOCK_BYTES));
  for (let at = 0; at < input.length; at += LZ4_BLOCK_BYTES) {
    const block = input.subarray(at, at + LZ4_BLOCK_BYTES);
    // A fresh hash table per block keeps every match inside its block (independent blocks).
    const size = lz4.compressBlock(block, scratch, 0, block.length, new Uint32Array(1 << 16));
    const length = Buffer.alloc(4);
    if (size === 0 || size >= block.length) {
      length.writeUInt32LE((LZ4_UNCOMPRESSED_BIT | block.length) >>> 0);
      parts.push(length, Buffer.from(block));
    } else {
      length.writeUInt32LE(size);
      parts.push(length, Buffer.from(scratch.subarray(0, size)));
    }
  }
  parts.push(Buffer.alloc(4)); // end mark
  return Buffer.concat(parts);
}

function forKafkajs(codec: Codec): () => {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buffer: Buffer): Promise<Buffer>;
} {
  return () => ({
    compress: (encoder) => codec.compress(encoder.buffer),
    decompress: (buffer) => codec.decompress(buffer),
  });
}

/** kafkajs keeps codecs in one process-wide table; filling it twice is harmless. */
export function registerCompressionCodecs(): void {
  const { CompressionCodecs, CompressionTypes } = kafkajs;
  CompressionCodecs[CompressionTypes.ZSTD] = forKafkajs(zstdCodec);
  CompressionCodecs[CompressionTypes.Snappy] = forKafkajs(snappyCodec);
  CompressionCodecs[CompressionTypes.LZ4] = forKafkajs(lz4Codec);
}
