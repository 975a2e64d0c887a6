// The model kit's long clip (scripts/models/kit/whisper.py long_signal), made again here.
const RATE = 16_000;

/** 45 s of stepped tones at 16 kHz. */
export function longSignal(): Float32Array {
  const steps = [220, 330, 440, 550, 660, 770, 880, 990, 1100];
  return Float32Array.from({ length: 45 * RATE }, (_, n) => {
    const f = steps[Math.floor(n / (5 * RATE))] as number;
    return (
      0.4 * Math.sin((2 * Math.PI * f * n) / RATE) +
      0.1 * Math.sin((2 * Math.PI * 3 * f * n) / RATE)
    );
  });
}
