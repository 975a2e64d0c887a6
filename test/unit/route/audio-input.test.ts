// Audio reaches a pipeline as a file's bytes: the route checks the bytes, the container and the
// duration in the main thread (AUDIO_INVALID / AUDIO_TOO_LARGE / AUDIO_TOO_LONG), and the decoder
// turns anything it still cannot read into an InputError naming the field and the reason.
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { InputError } from '../../../src/errors.ts';
import { createHugot } from '../../../src/hugot.ts';
import { silentLogger } from '../../../src/logger.ts';
import { decodeAudio } from '../../../src/pipelines/audio/audio-decode.ts';
import { probeAudio, sniffAudioFormat } from '../../../src/pipelines/audio/audio-format.ts';
import { resample } from '../../../src/pipelines/audio/resample.ts';
import type { LabelScore } from '../../../src/pipelines/runtime/label-scores.ts';
import { AudioInputs, AudioRefusedError } from '../../../src/route/audio-input.ts';
import { StreamWorker } from '../../../src/worker/stream-worker.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'wav2vec2-audio-classification',
);
const AUDIO = join(MODEL, 'audio');
let clips: { name: string; bytes: Buffer }[];
let dir: string;

beforeAll(async () => {
  const names = (await readdir(AUDIO)).sort();
  clips = await Promise.all(
    names.map(async (name) => ({ name, bytes: await readFile(join(AUDIO, name)) })),
  );
  dir = await mkdtemp(join(tmpdir(), 'hugot-audio-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const clip = (suffix: string): Buffer => {
  const found = clips.find((c) => c.name.endsWith(suffix));
  if (found === undefined) throw new Error(`no fixture clip ending ${suffix}`);
  return found.bytes;
};

async function decodeError(input: unknown): Promise<InputError> {
  try {
    await decodeAudio(input as Uint8Array, 'inputs[0]');
  } catch (err) {
    expect(err).toBeInstanceOf(InputError);
    return err as InputError;
  }
  throw new Error('decoded');
}

describe('audio decoding', () => {
  it('reads each format by its magic bytes, with its duration from the headers', () => {
    const seen = clips.map((c) => [c.name, sniffAudioFormat(c.bytes)]);
    expect(seen).toEqual([
      ['chirp_22k_stereo.flac', 'flac'],
      ['noise_8k.ogg', 'ogg'],
      ['sweep_48k_float.wav', 'wav'],
      ['tone_16k_pcm16.wav', 'wav'],
      ['tones_44k_stereo.mp3', 'mp3'],
    ]);
    for (const c of clips) {
      const probe = probeAudio(c.bytes);
      if ('problem' in probe) throw new Error(probe.problem);
      // 0.2 s each; MP3 and Ogg frames round up to whole frames (and MP3's encoder delay).
      expect(probe.seconds, c.name).toBeGreaterThanOrEqual(0.199);
      expect(probe.seconds, c.name).toBeLessThan(0.3);
    }
  });

  it('names the field and the reason for what it cannot read', async () => {
    expect((await decodeError(new Uint8Array([1, 2, 3]))).message).toMatch(
      /inputs\[0\] \(3 bytes\) is not audio in a format the worker reads/,
    );
    const random = new Uint8Array(4096).map((_, i) => (i * 7919) % 251);
    for (const head of ['fLaC', 'OggS', 'ID3']) {
      const bytes = Buffer.concat([Buffer.from(head), random]);
      const err = await decodeError(bytes);
      expect(err.field).toBe('inputs[0]');
      expect(err.message, head).toMatch(/FLAC|MP3|OGG/);
    }
    // A WAV header whose data is cut short, and a FLAC file cut in half.
    const wav = clip('tone_16k_pcm16.wav');
    const header = Buffer.from(wav.subarray(0, 44));
    expect((await decodeError(header)).message).toMatch(/WAV/);
    const flac = clip('.flac');
    const err = await decodeError(flac.subarray(0, 40));
    expect(err.message).toMatch(/FLAC/);
    expect((await decodeError(42)).message).toMatch(/must be an audio file path/);
    expect((await decodeError('/no/such/file.wav')).message).toMatch(/cannot read/);
    expect((await decodeError({ pcm: new Float32Array(0), samplingRate: 16000 })).message).toMatch(
      /non-empty Float32Array/,
    );
    expect((await decodeError({ pcm: [0.1], samplingRate: 16000 })).message).toMatch(/raw audio/);
  });

  it('resamples only when the rates differ, to ceil(n * to / from) samples', () => {
    const audio = Float32Array.from({ length: 441 }, (_, i) => Math.sin(i / 10));
    expect(resample(audio, 16000, 16000)).toBe(audio);
    expect(resample(audio, 44100, 16000)).toHaveLength(160);
    expect(resample(audio, 8000, 16000)).toHaveLength(882);
    // A slow sine survives down-sampling (away from the edges).
    const down = resample(audio, 44100, 22050);
    for (let i = 20; i < 200; i += 1)
      expect(Math.abs((down[i] as number) - Math.sin((2 * i) / 10))).toBeLessThan(1e-3);
  });
});

describe('audio inputs on a route', () => {
  const limits = { maxBytes: 1_000_000, maxSeconds: 60 };

  function refusal(inputs: AudioInputs, input: unknown): AudioRefusedError {
    try {
      inputs.bytesOf(input, "'audio'");
    } catch (err) {
      expect(err).toBeInstanceOf(AudioRefusedError);
      return err as AudioRefusedError;
    }
    throw new Error('accepted');
  }

  it('takes base64 (a data: URL too) or bytes, and refuses what is not audio', () => {
    const inputs = new AudioInputs(limits);
    const wav = clip('tone_16k_pcm16.wav');
    for (const input of [
      wav.toString('base64'),
      `data:audio/wav;base64,${wav.toString('base64')}`,
      new Uint8Array(wav),
    ])
      expect(Buffer.from(inputs.bytesOf(input, "'audio'")).equals(wav)).toBe(true);
    expect(refusal(inputs, 'not base64!').reason).toBe('AUDIO_INVALID');
    expect(refusal(inputs, 42).reason).toBe('AUDIO_INVALID');
    const text = refusal(inputs, Buffer.from('hello, not audio').toString('base64'));
    expect(text.reason).toBe('AUDIO_INVALID');
    expect(text.message).toMatch(/WAV, FLAC, MP3, Ogg Vorbis/);
  });

  it('holds audio to limits.maxAudioBytes and limits.maxAudioSeconds before decoding', () => {
    const mp3 = clip('.mp3');
    const small = new AudioInputs({ maxBytes: 100, maxSeconds: 60 });
    expect(refusal(small, mp3.toString('base64')).reason).toBe('AUDIO_TOO_LARGE');
    const short = new AudioInputs({ maxBytes: 1_000_000, maxSeconds: 0.1 });
    for (const c of clips) {
      const err = refusal(short, c.bytes.toString('base64'));
      expect(err.reason, c.name).toBe('AUDIO_TOO_LONG');
      expect(err.message).toMatch(/over limits.maxAudioSeconds \(0.1\)/);
    }
  });
});

describe('audio file route', () => {
  it('classifies base64 audio fields from JSONL and dead-letters a corrupt one with the reason', async () => {
    const lines = clips.map((c) =>
      JSON.stringify({ id: c.name, audio: c.bytes.toString('base64') }),
    );
    const corrupt = Buffer.concat([
      Buffer.from('RIFF\x10\x00\x00\x00WAVEjunk'),
      Buffer.alloc(64, 9),
    ]);
    lines.splice(2, 0, JSON.stringify({ id: 'corrupt', audio: corrupt.toString('base64') }));
    const input = join(dir, 'in.jsonl');
    await writeFile(input, `${lines.join('\n')}\n`);
    const config = parseConfigText(
      `
models: { w2v: { path: ${JSON.stringify(MODEL)} } }
pipelines: { sounds: { task: audioClassification, model: w2v, options: { topK: 2 } } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: sounds
    input: { field: audio }
    output: { field: labels }
    sink: { type: file, path: ${JSON.stringify(join(dir, 'out.jsonl'))} }
    dlq: { type: file, path: ${JSON.stringify(join(dir, 'dlq.jsonl'))} }
`,
      {},
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    await worker.finished;
    await worker.stop(10_000);

    const out = (await readFile(join(dir, 'out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; labels: LabelScore[] });
    expect(out.map((r) => r.id)).toEqual(clips.map((c) => c.name));
    const hugot = createHugot();
    hugot.registerModel('w2v', { path: MODEL });
    await hugot.registerPipeline('sounds', {
      task: 'audioClassification',
      model: 'w2v',
      options: { topK: 2 },
    });
    const direct = await hugot.run<LabelScore[]>(
      'sounds',
      clips.map((c) => join(AUDIO, c.name)),
    );
    await hugot.close();
    // The route batches the clips as they arrive, the direct call both at once: a clip padded to
    // another length moves its scores in the last float bits (2e-7 seen on a loaded machine).
    out.forEach((r, i) => {
      const want = direct[i] ?? [];
      expect(r.labels.map((l) => l.label)).toEqual(want.map((l) => l.label));
      r.labels.forEach((l, k) => expect(l.score).toBeCloseTo(want[k]?.score ?? NaN, 5));
    });

    const dlq = (await readFile(join(dir, 'dlq.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { value?: string; headers: Record<string, string> });
    expect(dlq).toHaveLength(1);
    expect(dlq[0]?.headers['hugot.error.code']).toBe('AUDIO_INVALID');
    expect(dlq[0]?.headers['hugot.error.stage']).toBe('validate');
    expect(dlq[0]?.headers['hugot.error.message']).toMatch(/'audio' is not a readable WAV file/);
    expect(JSON.parse(dlq[0]?.value ?? '{}')).toMatchObject({ id: 'corrupt' });
  });

  it('checks audio settings at start-up: bytes records need output.mode result', () => {
    const base = (route: string): string => `
models: { m: { path: x } }
pipelines: { a: { task: audioClassification, model: m } }
routes:
  - source: { type: kafka, topic: in, groupId: g }
    pipeline: a
${route}
    sink: { type: kafka, topic: out }
connections: { kafka: { brokers: [localhost:9092] } }
limits: { maxAudioSeconds: 30, maxAudioBytes: 5000000 }
`;
    expect(() => parseConfigText(base('    input: { format: bytes }'), {})).toThrow(
      /output.mode: result/,
    );
    const config = parseConfigText(
      base('    input: { format: bytes }\n    output: { mode: result }'),
      {},
    );
    expect(config.limits).toMatchObject({ maxAudioSeconds: 30, maxAudioBytes: 5_000_000 });
    expect(() => parseConfigText(base('    input: { images: { from: base64 } }'), {})).toThrow(
      /does not take images/,
    );
  });
});
