// Speech recognition through the file route: base64 WAV fields in, Whisper's transcripts out
// (equal to the Python goldens), a corrupt clip and one over limits.maxAudioSeconds dead-lettered
// with the stage, code and reason; on the generative engine, transcripts streamed a segment at a
// time whose deltas add up to Python's text.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { encodeWav } from '../../../src/pipelines/audio/wav-encode.ts';
import { readGoldens } from '../../parity/goldens.ts';
import { longSignal } from '../../helpers/long-signal.ts';
import { toneWav } from '../../helpers/tone-wav.ts';
import {
  readDeadLetters,
  readJsonl,
  readStreams,
  runToEnd,
  scratchDir,
  writeJsonl,
  type StreamedValue,
} from '../../helpers/file-route.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'whisper-speech-recognition',
);
const dir = scratchDir('asr-route');

/** `{id: clip-N, audio}` records of the fixture's clips, each file in base64. */
function clipRecords(clips: readonly string[]): Promise<{ id: string; audio: string }[]> {
  return Promise.all(
    clips.map(async (clip, i) => ({
      id: `clip-${i}`,
      audio: (await readFile(join(MODEL, clip))).toString('base64'),
    })),
  );
}

describe('automaticSpeechRecognition file route', () => {
  it("writes Python's transcripts in order and dead-letters corrupt and over-long audio", async () => {
    const golden = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) => g.name === 'greedy_en',
    );
    const clips = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { text: string }[];
    expect(clips.length).toBe(3);
    const records: unknown[] = await clipRecords(clips);
    const corrupt = Buffer.concat([
      Buffer.from('RIFF\x10\x00\x00\x00WAVEjunk'),
      Buffer.alloc(64, 9),
    ]);
    records.splice(1, 0, { id: 'corrupt', audio: corrupt.toString('base64') });
    records.splice(3, 0, { id: 'too-long', audio: toneWav(6).toString('base64') });
    await writeJsonl(dir.file('in.jsonl'), records);
    await runToEnd(`
models: { whisper: { path: ${JSON.stringify(MODEL)} } }
pipelines:
  asr:
    task: automaticSpeechRecognition
    model: whisper
    options: { language: en, task: transcribe, maxNewTokens: 20, numBeams: 1 }
limits: { maxAudioSeconds: 5 }
routes:
  - source: { type: file, path: ${dir.quoted('in.jsonl')} }
    pipeline: asr
    input: { field: audio }
    output: { field: transcript }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`);
    const out = await readJsonl<{ id: string; transcript: { text: string } }>(
      dir.file('out.jsonl'),
    );
    expect(out.map((r) => r.id)).toEqual(['clip-0', 'clip-1', 'clip-2']);
    expect(out.map((r) => r.transcript)).toEqual(expected);

    const dlq = await readDeadLetters(dir.file('dlq.jsonl'));
    expect(dlq.map((d) => (JSON.parse(d.value) as { id: string }).id)).toEqual([
      'corrupt',
      'too-long',
    ]);
    expect(dlq[0]?.headers).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'AUDIO_INVALID',
    });
    expect(dlq[0]?.headers['hugot.error.message']).toMatch(/'audio' is not a readable WAV file/);
    expect(dlq[1]?.headers).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'AUDIO_TOO_LONG',
    });
    expect(dlq[1]?.headers['hugot.error.message']).toMatch(/over limits.maxAudioSeconds \(5\)/);
  });

  it('streams transcripts from the generative engine a segment at a time', async () => {
    const short = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) => g.name === 'timestamps_en',
    );
    const long = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) => g.name === 'long_form_sequential',
    );
    const clips = (short?.call.inputs ?? []) as string[];
    const expected = [
      ...((long?.output ?? []) as unknown[]),
      ...((short?.output ?? []) as unknown[]),
    ] as { text: string; chunks: unknown[] }[];
    const records = [
      {
        id: 'long',
        audio: Buffer.from(encodeWav(longSignal(), 16_000, 'float32')).toString('base64'),
      },
      ...(await clipRecords(clips)),
    ];
    await writeJsonl(dir.file('streamed-in.jsonl'), records);
    await runToEnd(`
models: { whisper: { path: ${JSON.stringify(MODEL)} } }
pipelines:
  asr:
    task: automaticSpeechRecognition
    model: whisper
    options: { language: en, task: transcribe, maxNewTokens: 20, numBeams: 1, returnTimestamps: true }
    generative: { threads: 1, maxActive: 2 }
# The 45 s clip is float32 WAV in base64 (as the goldens' samples): ~3.8 MB.
limits: { maxRecordBytes: 8000000 }
routes:
  - source: { type: file, path: ${dir.quoted('streamed-in.jsonl')} }
    pipeline: asr
    input: { field: audio }
    output: { field: transcript, stream: { everyTokens: 1 } }
    sink: { type: file, path: ${dir.quoted('streamed-out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('streamed-dlq.jsonl')} }
`);
    expect(await readDeadLetters(dir.file('streamed-dlq.jsonl'))).toEqual([]);
    const streams = await readStreams<
      StreamedValue & { delta: string; text?: string; chunks?: unknown[] }
    >(dir.file('streamed-out.jsonl'), 'transcript');
    for (const [i, id] of ['long', 'clip-0', 'clip-1', 'clip-2'].entries()) {
      const stream = streams.get(id) ?? [];
      const final = stream.at(-1);
      expect(final?.final).toBe(true);
      expect(final?.text).toBe(expected[i]?.text);
      expect(final?.chunks).toEqual(expected[i]?.chunks);
      expect(stream.map((r) => r.sequence)).toEqual(stream.map((_, n) => n));
      expect(stream.map((r) => r.delta).join('')).toBe(expected[i]?.text);
    }
    // The 45 s clip's first segments were written before it ended.
    expect(streams.get('long')?.filter((r) => !r.final).length).toBeGreaterThan(0);
  });
});
