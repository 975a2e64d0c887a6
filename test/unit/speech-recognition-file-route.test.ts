// Speech recognition through the file route: base64 WAV fields in, Whisper's transcripts out
// (equal to the Python goldens), a corrupt clip and one over limits.maxAudioSeconds dead-lettered
// with the stage, code and reason.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readGoldens } from '../parity/goldens.ts';
import { toneWav } from '../helpers/tone-wav.ts';
import {
  readDeadLetters,
  readJsonl,
  runToEnd,
  scratchDir,
  writeJsonl,
} from '../helpers/file-route.ts';

const MODEL = join(import.meta.dirname, '..', 'fixtures', 'models', 'whisper-speech-recognition');
const dir = scratchDir('asr-route');

describe('automaticSpeechRecognition file route', () => {
  it("writes Python's transcripts in order and dead-letters corrupt and over-long audio", async () => {
    const golden = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) => g.name === 'greedy_en',
    );
    const clips = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { text: string }[];
    expect(clips.length).toBe(3);
    const records: unknown[] = await Promise.all(
      clips.map(async (clip, i) => ({
        id: `clip-${i}`,
        audio: (await readFile(join(MODEL, clip))).toString('base64'),
      })),
    );
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
});
