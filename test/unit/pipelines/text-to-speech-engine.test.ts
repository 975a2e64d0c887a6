// SpeechT5 on the generative engine's segment loop: texts that arrive while others speak join at
// the next step, each text's waveform streams as its frames become final, the streamed samples
// add up to the batch path's waveform, and the final audio is the batch path's WAV byte for byte
// (which equals Python's goldens: test/parity/text-to-speech.parity.test.ts).
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SequenceEvent } from '../../../src/generative/protocol.ts';
import { SegmentLoop } from '../../../src/generative/segment-loop.ts';
import {
  TextToSpeechPipeline,
  type TextToSpeechOptions,
} from '../../../src/pipelines/audio/text-to-speech.ts';
import { concatSamples } from '../../../src/pipelines/audio/samples.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { readGoldens } from '../../parity/goldens.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'speecht5-text-to-speech',
);
const store = new ModelStore();
afterAll(() => store.close());

interface SpeechCase {
  name: string;
  call: { inputs: string[]; options: TextToSpeechOptions };
  output: { audio: number[] }[];
}

function golden(name: string): SpeechCase {
  const found = (
    readGoldens('speecht5-text-to-speech') as unknown as { pipeline: SpeechCase[] }
  ).pipeline.find((g) => g.name === name);
  expect(found).toBeDefined();
  return found as SpeechCase;
}

async function pipelineOf(options: TextToSpeechOptions): Promise<TextToSpeechPipeline> {
  return new TextToSpeechPipeline('textToSpeech', await store.load({ path: MODEL }), options);
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let max = 0;
  for (let i = 0; i < a.length; i += 1) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}

describe('SegmentLoop (text to speech)', () => {
  it('streams each waveform as its frames become final; the pieces add up to it', async () => {
    const { call, output } = golden('threshold');
    const options = { ...call.options, streamFrames: 4 };
    const pipeline = await pipelineOf(options);
    const reach = await pipeline.vocoderReach();
    expect(reach).toBeDefined();
    const batch = await Promise.all(call.inputs.map((text) => pipeline.synthesize(text)));
    const bytes = await pipeline.run(call.inputs);

    const loop = await SegmentLoop.create(pipeline, { maxActive: 4 });
    const steps: SequenceEvent[][] = [];
    await loop.submit({ id: 0, input: call.inputs[0] });
    for (let i = 0; i < 5; i += 1) steps.push(await loop.step());
    await loop.submit({ id: 1, input: call.inputs[1] });
    for (let n = 0; !loop.idle; n += 1) {
      expect(n).toBeLessThan(2000);
      steps.push(await loop.step());
    }
    const events = steps.flat();
    for (const id of [0, 1]) {
      const tokens = events.flatMap((e) => (e.kind === 'token' && e.id === id ? [e] : []));
      const done = events.find((e) => e.kind === 'done' && e.id === id);
      if (done?.kind !== 'done') throw new Error(`request ${id} did not finish`);
      // One event per decoder step; the final audio is the batch path's WAV, byte for byte.
      expect(tokens.length).toBe((batch[id]?.frames ?? 0) / 2);
      expect(done.result.generatedTokens).toBe(tokens.length);
      expect(Buffer.from(done.result.audio ?? []).equals(Buffer.from(bytes[id]?.audio ?? []))).toBe(
        true,
      );
      const pieces = tokens.flatMap((e) => (e.audio === undefined ? [] : [e.audio.samples]));
      // Audio came out before the text's last step, in more than one piece.
      const beforeLast = tokens.slice(0, -1).filter((e) => e.audio !== undefined);
      expect(beforeLast.length).toBeGreaterThan(1);
      expect(maxDiff(concatSamples(pieces), batch[id]?.waveform ?? [])).toBeLessThanOrEqual(1e-5);
      expect(maxDiff(concatSamples(pieces), output[id]?.audio ?? [])).toBeLessThanOrEqual(1e-4);
    }
  });

  it('a text whose speech outgrows max_speech_positions fails alone; the other speaks on', async () => {
    // Python fails on this text at threshold 2.5 (goldens: speech_over_max_speech_positions); the
    // short text stops at its max length first.
    const pipeline = await pipelineOf({ threshold: 2.5 });
    const alone = await pipeline.run(['Hello there.']);
    const loop = await SegmentLoop.create(pipeline, { maxActive: 2 });
    const events: SequenceEvent[] = [];
    await loop.submit({ id: 1, input: 'Meeting moved to Thursday at noon.' });
    for (let i = 0; i < 150; i += 1) events.push(...(await loop.step()));
    await loop.submit({ id: 2, input: 'Hello there.' });
    for (let n = 0; !loop.idle; n += 1) {
      expect(n).toBeLessThan(1000);
      events.push(...(await loop.step()));
    }
    const failed = events.find((e) => e.kind === 'failed');
    expect(failed?.kind === 'failed' && failed.id).toBe(1);
    expect(failed?.kind === 'failed' && failed.error.message).toMatch(
      /did not stop within 256 frames \(max_speech_positions\)/,
    );
    const done = events.find((e) => e.kind === 'done');
    expect(done?.kind === 'done' && done.id).toBe(2);
    // The failure came while the short text was still speaking.
    expect(events.indexOf(failed as SequenceEvent)).toBeLessThan(
      events.indexOf(done as SequenceEvent),
    );
    const audio = done?.kind === 'done' ? done.result.audio : undefined;
    expect(Buffer.from(audio ?? []).equals(Buffer.from(alone[0]?.audio ?? []))).toBe(true);
  });

  it('a text that fails its first step fails alone', async () => {
    const pipeline = await pipelineOf({ speakerEmbeddings: [1, 2, 3] });
    const loop = await SegmentLoop.create(pipeline, { maxActive: 2 });
    const failed = await loop.submit({ id: 5, input: 'Hello there.' });
    expect(failed?.kind === 'failed' && failed.error.message).toMatch(/speaker embeddings/);
    expect(loop.idle).toBe(true);
  });
});
