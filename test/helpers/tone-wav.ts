// A WAV made in the test, for audio whose length is the point (over limits.maxAudioSeconds).
import wavefile from 'wavefile';

/** `seconds` of a quiet 300 Hz tone at 16 kHz, 16-bit mono. */
export function toneWav(seconds: number): Buffer {
  const wav = new wavefile.WaveFile();
  const samples = Int16Array.from({ length: seconds * 16_000 }, (_, n) =>
    Math.round(3000 * Math.sin((2 * Math.PI * 300 * n) / 16_000)),
  );
  wav.fromScratch(1, 16_000, '16', samples);
  return Buffer.from(wav.toBuffer());
}
