// Text to speech through the file route: JSONL texts in, WAV files out (base64 in the output
// record) that decode back to Python's waveforms; the empty text is spoken as Python speaks it,
// and a text over the model's max_text_positions, where Python fails, is dead-lettered. On the
// generative engine the WAV streams in pieces whose samples add up to the final waveform.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { decodeAudio } from '../../../src/pipelines/audio/audio-decode.ts';
import { compareDeep } from '../../parity/compare.ts';
import { readGoldens } from '../../parity/goldens.ts';
import {
  readDeadLetters,
  readJsonl,
  readStreams,
  runToEnd,
  scratchDir,
  writeJsonl,
  type StreamedValue,
} from '../../helpers/file-route.ts';

const MODEL = 'speecht5-text-to-speech';
const MODEL_PATH = join(import.meta.dirname, '..', '..', 'fixtures', 'models', MODEL);
const dir = scratchDir('tts-route');

interface Spoken {
  audio: number[];
  sampling_rate: number;
}

describe('textToSpeech file route', () => {
  it("writes WAV files of Python's waveforms in order and dead-letters what Python fails on", async () => {
    const goldens = readGoldens(MODEL) as unknown as {
      pipeline: {
        name: string;
        call: { inputs: string[]; speaker_embeddings: number[] | null };
        output: Spoken[];
      }[];
      errors: { name: string; call: { inputs: string } }[];
    };
    const defaults = goldens.pipeline.find((g) => g.name === 'defaults');
    const other = goldens.pipeline.find((g) => g.name === 'other_speaker');
    const tooLong = goldens.errors.find((e) => e.name === 'text_over_max_text_positions');
    if (defaults === undefined || other === undefined || tooLong === undefined)
      throw new Error('the goldens lack the defaults, other_speaker or over-long cases');
    expect(defaults.call.inputs).toContain('');

    const good = [
      ...defaults.call.inputs.map((text, i) => ({ id: `t-${i}`, speech: text })),
      {
        id: 'own-speaker',
        speech: { text: other.call.inputs[0], speakerEmbeddings: other.call.speaker_embeddings },
      },
    ];
    const expected = [...defaults.output, other.output[0]];
    const bad = [
      { id: 'too-long', speech: tooLong.call.inputs },
      { id: 'number', speech: 42 },
    ];
    const records: unknown[] = [...good];
    records.splice(2, 0, bad[0]);
    records.splice(4, 0, bad[1]);
    await writeJsonl(dir.file('in.jsonl'), records);
    await runToEnd(`
models: { t5: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines: { speak: { task: textToSpeech, model: t5 } }
routes:
  - source: { type: file, path: ${dir.quoted('in.jsonl')} }
    pipeline: speak
    input: { field: speech }
    output: { field: wav }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`);

    // Python's keys ({audio, sampling_rate}); the audio a WAV file in base64.
    const out = await readJsonl<{ id: string; wav: { audio: string; sampling_rate: number } }>(
      dir.file('out.jsonl'),
    );
    expect(out.every(({ wav }) => Object.keys(wav).sort().join() === 'audio,sampling_rate')).toBe(
      true,
    );
    expect(out.map((r) => r.id)).toEqual(good.map((r) => r.id));
    const spoken = await Promise.all(
      out.map(async ({ wav }): Promise<Spoken> => {
        const bytes = new Uint8Array(Buffer.from(wav.audio, 'base64'));
        expect(String.fromCharCode(...bytes.subarray(0, 4))).toBe('RIFF');
        const decoded = await decodeAudio(bytes, 'wav');
        expect(decoded.samplingRate).toBe(wav.sampling_rate);
        return { audio: Array.from(decoded.channels[0] ?? []), sampling_rate: wav.sampling_rate };
      }),
    );
    expect(compareDeep(spoken, expected, 1e-4).differences).toEqual([]);

    const dlq = await readDeadLetters(dir.file('dlq.jsonl'));
    const byId = new Map(dlq.map((d) => [(JSON.parse(d.value) as { id: string }).id, d.headers]));
    expect([...byId.keys()].sort()).toEqual(['number', 'too-long']);
    expect(byId.get('too-long')).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(byId.get('too-long')?.['hugot.error.message']).toMatch(
      /is 106 tokens and SpeechT5 reads at most 64 \(max_text_positions\); split the text/,
    );
    expect(byId.get('number')).toMatchObject({ 'hugot.error.stage': 'validate' });
    expect(byId.get('number')?.['hugot.error.message']).toMatch(/must be a string, or \{text/);
  });

  it('streams WAV pieces from the generative engine; their samples add up to the final', async () => {
    const goldens = readGoldens(MODEL) as unknown as {
      pipeline: { name: string; call: { inputs: string[] }; output: Spoken[] }[];
    };
    const threshold = goldens.pipeline.find((g) => g.name === 'threshold');
    if (threshold === undefined) throw new Error('the goldens lack the threshold case');
    await writeJsonl(
      dir.file('streamed-in.jsonl'),
      threshold.call.inputs.map((text, i) => ({ id: `t-${i}`, speech: text })),
    );
    await runToEnd(`
models: { t5: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines:
  speak:
    task: textToSpeech
    model: t5
    options: { threshold: 0.9, streamFrames: 8 }
    generative: { threads: 1, maxActive: 2 }
routes:
  - source: { type: file, path: ${dir.quoted('streamed-in.jsonl')} }
    pipeline: speak
    input: { field: speech }
    output: { field: wav, stream: { everyTokens: 16 } }
    sink: { type: file, path: ${dir.quoted('streamed-out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('streamed-dlq.jsonl')} }
`);
    expect(await readDeadLetters(dir.file('streamed-dlq.jsonl'))).toEqual([]);
    const streams = await readStreams<
      StreamedValue & { audioDelta?: string; audio?: string; samplingRate?: number }
    >(dir.file('streamed-out.jsonl'), 'wav');
    const samplesOf = async (base64: string): Promise<number[]> =>
      Array.from(
        (await decodeAudio(new Uint8Array(Buffer.from(base64, 'base64')), 'wav')).channels[0] ?? [],
      );
    for (const [i, expected] of threshold.output.entries()) {
      const stream = streams.get(`t-${i}`) ?? [];
      const final = stream.at(-1);
      expect(final?.final).toBe(true);
      expect(stream.map((r) => r.sequence)).toEqual(stream.map((_, n) => n));
      // Pieces were written before the final.
      expect(stream.filter((r) => !r.final && r.audioDelta !== undefined).length).toBeGreaterThan(
        1,
      );
      const pieces = await Promise.all(
        stream.flatMap((r) => (r.audioDelta === undefined ? [] : [samplesOf(r.audioDelta)])),
      );
      const whole = await samplesOf(final?.audio ?? '');
      expect(final?.samplingRate).toBe(expected.sampling_rate);
      expect(compareDeep(whole, expected.audio, 1e-4).differences).toEqual([]);
      expect(compareDeep(pieces.flat(), whole, 1e-5).differences).toEqual([]);
    }
  });
});
