// The default speaker a SpeechT5 folder (or the pipeline's option) names: numpy's .npy as
// numpy.save writes it, and the raw float32 .bin transformers.js's examples ship.
import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { folderSpeaker, readSpeakerFile } from '../../../src/pipelines/audio/speaker-embeddings.ts';
import { scratchDir } from '../../helpers/file-route.ts';

const dir = scratchDir('speaker');

/** A version-1 .npy file, laid out as numpy.save lays it out (header padded to 64 bytes). */
function npy(descr: string, shape: string, data: ArrayBufferView): Buffer {
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const prefix = Buffer.alloc(10);
  prefix.write('\x93NUMPY', 0, 'latin1');
  prefix[6] = 1;
  prefix.writeUInt16LE(header.length, 8);
  return Buffer.concat([
    prefix,
    Buffer.from(header, 'latin1'),
    Buffer.from(data.buffer, data.byteOffset, data.byteLength),
  ]);
}

describe('speaker embeddings files', () => {
  it('reads float32 and float64 .npy vectors and rows, and raw float32 .bin', async () => {
    const values = [0.5, -1.25, 3];
    const cases: [string, Buffer][] = [
      ['f4.npy', npy('<f4', '(3,)', Float32Array.from(values))],
      ['f8.npy', npy('<f8', '(1, 3)', Float64Array.from(values))],
      ['raw.bin', Buffer.from(Float32Array.from(values).buffer)],
    ];
    for (const [name, bytes] of cases) {
      await writeFile(dir.file(name), bytes);
      expect(Array.from(await readSpeakerFile(dir.file(name), name))).toEqual(values);
    }
    await writeFile(dir.file('speaker_embeddings.bin'), cases[2]?.[1] ?? Buffer.alloc(0));
    expect(Array.from((await folderSpeaker(dir.path, ['speaker_embeddings.bin'])) ?? [])).toEqual(
      values,
    );
    expect(await folderSpeaker(dir.path, ['config.json'])).toBeUndefined();
  });

  it('refuses what is not a vector of floats, naming the file', async () => {
    const bad: [string, Buffer, RegExp][] = [
      ['ints.npy', npy('<i8', '(2,)', BigInt64Array.from([1n, 2n])), /dtype <i8 is not/],
      ['matrix.npy', npy('<f4', '(2, 2)', new Float32Array(4)), /shape \(2, 2\) is not a vector/],
      ['short.npy', npy('<f4', '(8,)', new Float32Array(2)), /shorter than its shape/],
      ['text.npy', Buffer.from('not numpy at all'), /not a \.npy file/],
      ['odd.bin', Buffer.from([1, 2, 3]), /not a whole number of float32 values/],
    ];
    for (const [name, bytes, reason] of bad) {
      await writeFile(dir.file(name), bytes);
      const read = readSpeakerFile(dir.file(name), 'speakerEmbeddings');
      await expect(read).rejects.toMatchObject({ name: 'ModelFolderError' });
      await expect(read).rejects.toThrow(reason);
    }
    await expect(readSpeakerFile(dir.file('none.npy'), 'x')).rejects.toThrow(/cannot read/);
  });
});
