// Waveforms out as WAV files, written by wavefile (the library the audio decode reads WAV with).
// Float32 is the default because it is the model's own output: the samples a consumer decodes are
// exactly Python's `audio` array. 16-bit PCM is half the size and what
// every player reads; it rounds each sample to 1/32768 and clips at ±1.
import wavefile from 'wavefile';
import type { WavFormat } from '../generation/segmentwise.ts';

/** A mono WAV file of the samples at the given rate. */
export function encodeWav(
  samples: Float32Array,
  samplingRate: number,
  format: WavFormat,
): Uint8Array {
  const wav = new wavefile.WaveFile();
  if (format === 'float32') {
    wav.fromScratch(1, samplingRate, '32f', samples);
  } else {
    const pcm = Int16Array.from(samples, (v) =>
      Math.max(-32768, Math.min(32767, Math.round(v * 32768))),
    );
    wav.fromScratch(1, samplingRate, '16', pcm);
  }
  return wav.toBuffer();
}
