// A SpeechT5 waveform streamed while the decoder still runs, sample for sample the waveform of
// the whole spectrogram. The postnet and HiFi-GAN are stacks of convolutions: a sample depends
// only on the mel frames within a fixed reach of its own frame, so vocoding a window of frames
// gives the whole run's samples everywhere but within that reach of the window's edges. The reach
// is measured once on the model itself (one frame changed, which samples moved), not read from a
// config the export may not carry; a graph where one frame moves every sample (or whose output
// is not hop samples per frame, shifting with its input) is not streamed: its audio comes whole.
import { Tensor } from '../../runtime/tensor.ts';
import { InferenceError } from '../../errors.ts';
import { floatData } from '../../runtime/half-float.ts';
import type { RunSession, SpeechT5Layout, Spectrogram } from './speecht5-model.ts';

export interface VocoderReach {
  /** Waveform samples per mel frame. */
  hop: number;
  /** Frames either side of a frame that its samples depend on (a margin included). */
  frames: number;
}

/** The postnet and the vocoder over `frames` mel frames `[frames, melBins]`. */
export async function vocodeFrames(
  layout: SpeechT5Layout,
  run: RunSession,
  data: Float32Array,
  frames: number,
): Promise<Float32Array> {
  const session = layout.postnetAndVocoder;
  const outputs = await run(
    session,
    {
      [session.inputNames[0] ?? 'spectrogram']: new Tensor('float32', data, [
        frames,
        layout.melBins,
      ]),
    },
    [session.outputNames[0] ?? 'waveform'],
  );
  const waveform = outputs[session.outputNames[0] ?? 'waveform'];
  if (waveform === undefined) throw new InferenceError('the SpeechT5 vocoder returned no waveform');
  return Float32Array.from(floatData(waveform, 'waveform'));
}

const PROBE_FRAMES = [32, 128, 512];

/** How far a frame reaches into the waveform; undefined when the graph cannot be streamed. */
export async function measureReach(
  layout: SpeechT5Layout,
  run: RunSession,
): Promise<VocoderReach | undefined> {
  const bins = layout.melBins;
  for (const length of PROBE_FRAMES) {
    // Log-mel-like values; the pattern only has to be the same in both runs.
    const base = Float32Array.from({ length: length * bins }, (_, i) => -2 + Math.sin(i * 0.37));
    const whole = await vocodeFrames(layout, run, base, length);
    if (whole.length % length !== 0) return undefined;
    const hop = whole.length / length;
    const middle = length >> 1;
    const changed = Float32Array.from(base);
    for (let b = 0; b < bins; b += 1)
      changed[middle * bins + b] = (changed[middle * bins + b] ?? 0) + 1;
    const moved = await vocodeFrames(layout, run, changed, length);
    let lo = -1;
    let hi = -1;
    for (let i = 0; i < whole.length; i += 1) {
      if (whole[i] === moved[i]) continue;
      if (lo < 0) lo = i;
      hi = i;
    }
    if (lo < 0) return undefined;
    // The change reached an end of the probe: try a longer one.
    if (lo === 0 || hi === whole.length - 1) continue;
    const left = Math.ceil((middle * hop - lo) / hop);
    const right = Math.ceil((hi + 1 - (middle + 1) * hop) / hop);
    const frames = Math.max(left, right, 0) + 2;
    if (!(await shiftsWithInput(layout, run, base, length, whole, hop, frames))) return undefined;
    return { hop, frames };
  }
  return undefined;
}

/** The window's interior equals the whole run's samples, frame for frame. */
async function shiftsWithInput(
  layout: SpeechT5Layout,
  run: RunSession,
  base: Float32Array,
  length: number,
  whole: Float32Array,
  hop: number,
  reach: number,
): Promise<boolean> {
  const from = Math.min(reach, length);
  const part = await vocodeFrames(layout, run, base.subarray(from * layout.melBins), length - from);
  if (part.length !== (length - from) * hop) return false;
  for (let f = from + reach; f < length - reach; f += 1)
    for (let s = 0; s < hop; s += 1) {
      const a = whole[f * hop + s] as number;
      const b = part[(f - from) * hop + s] as number;
      if (Math.abs(a - b) > 1e-5 * Math.max(1, Math.abs(a))) return false;
    }
  return true;
}

/**
 * One text's waveform, handed out as its frames become final: `take` vocodes a window around
 * the frames no later frame can change and returns their samples.
 */
export class VocoderStream {
  private readonly layout: SpeechT5Layout;
  private readonly run: RunSession;
  private readonly reach: VocoderReach;
  /** Frames whose samples were handed out. */
  private done = 0;

  constructor(layout: SpeechT5Layout, run: RunSession, reach: VocoderReach) {
    this.layout = layout;
    this.run = run;
    this.reach = reach;
  }

  /**
   * The samples of frames that became final, once at least `minFrames` of them are waiting;
   * undefined otherwise. `frames` is how many the spectrogram holds; it is read only then.
   */
  async take(
    frames: number,
    minFrames: number,
    spectrogram: () => Spectrogram,
  ): Promise<Float32Array | undefined> {
    const { frames: reach, hop } = this.reach;
    const end = frames - reach;
    if (end - this.done < Math.max(1, minFrames)) return undefined;
    const from = Math.max(0, this.done - reach);
    const bins = this.layout.melBins;
    const window = await vocodeFrames(
      this.layout,
      this.run,
      spectrogram().data.subarray(from * bins, frames * bins),
      frames - from,
    );
    const samples = window.slice((this.done - from) * hop, (end - from) * hop);
    this.done = end;
    return samples;
  }

  /** The samples of the whole waveform not yet handed out. */
  rest(whole: Float32Array): Float32Array {
    return whole.slice(this.done * this.reach.hop);
  }
}
