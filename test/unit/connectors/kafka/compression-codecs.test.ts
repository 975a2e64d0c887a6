// Kafka's compression codecs for kafkajs: the Java client's own framings read back (fixtures made
// by test/fixtures/kafka-compression/MakeFixtures.java with kafka-clients 4.1.1), and what we
// write is the framing the Java client expects.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import kafkajs from 'kafkajs';
import * as snappy from 'snappyjs';
import { describe, expect, it } from 'vitest';
import {
  lz4Codec,
  registerCompressionCodecs,
  snappyCodec,
  zstdCodec,
  type Codec,
} from '../../../../src/connectors/kafka/compression-codecs.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', '..', 'fixtures', 'kafka-compression');

/** The body MakeFixtures.java compresses. */
function fixtureInput(): Buffer {
  let text = '';
  for (let i = 0; i < 3000; i++) text += `record ${i} hugot-stream; `;
  return Buffer.from(text, 'utf8');
}

const codecs: [string, Codec][] = [
  ['snappy', snappyCodec],
  ['lz4', lz4Codec],
  ['zstd', zstdCodec],
];

describe('Kafka compression codecs', () => {
  for (const [name, codec] of codecs) {
    it(`${name}: reads the Java client's framing`, async () => {
      const javaBytes = readFileSync(join(FIXTURES, `java.${name}`));
      expect((await codec.decompress(javaBytes)).equals(fixtureInput())).toBe(true);
    });

    it(`${name}: round-trips empty, tiny, multi-block and incompressible input`, async () => {
      const random = Buffer.alloc(200_000);
      for (let i = 0; i < random.length; i++) random[i] = (i * 2654435761) >>> 24;
      for (const input of [
        Buffer.alloc(0),
        Buffer.from('x'),
        Buffer.from('{"text":"héllo"}'.repeat(20_000)),
        random,
      ]) {
        const back = await codec.decompress(await codec.compress(input));
        expect(back.equals(input)).toBe(true);
      }
    });
  }

  it('snappy: writes the xerial framing (as snappy-java) and still reads a bare raw block', async () => {
    const input = fixtureInput();
    const ours = await snappyCodec.compress(input);
    expect([...ours.subarray(0, 8)]).toEqual([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
    const raw = Buffer.from(snappy.compress(input));
    expect((await snappyCodec.decompress(raw)).equals(input)).toBe(true);
  });

  it('lz4: writes frames of independent 64 KiB blocks with a valid header checksum', async () => {
    const ours = await lz4Codec.compress(fixtureInput());
    expect(ours.readUInt32LE(0)).toBe(0x184d2204);
    expect(ours[4]).toBe(0x60); // version 01, independent blocks, no checksums
    expect(ours[5]).toBe(0x40); // 64 KiB blocks
    const java = readFileSync(join(FIXTURES, 'java.lz4'));
    expect(ours.subarray(0, 7).equals(java.subarray(0, 7))).toBe(true);
  });

  it('registers a codec for every compression type kafkajs knows', async () => {
    const { CompressionCodecs, CompressionTypes } = kafkajs;
    registerCompressionCodecs();
    const table = CompressionCodecs as Record<number, () => unknown>;
    for (const type of [CompressionTypes.Snappy, CompressionTypes.LZ4, CompressionTypes.ZSTD]) {
      const make = table[type] as () => unknown;
      const codec = make() as {
        compress(e: { buffer: Buffer }): Promise<Buffer>;
        decompress(b: Buffer): Promise<Buffer>;
      };
      const input = Buffer.from('kafka batch body');
      expect((await codec.decompress(await codec.compress({ buffer: input }))).equals(input)).toBe(
        true,
      );
    }
  });
});
