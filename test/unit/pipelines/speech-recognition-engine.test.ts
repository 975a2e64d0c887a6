// Whisper on the generative engine's segment loop: clips that arrive while others are mid-clip
// join at the next step, a long clip streams its text a segment at a time, and every result is
// still Python's (the goldens of scripts/models/kit/whisper.py) with streamed texts adding up to it.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/errors.ts';
import type { SequenceEvent } from '../../../src/generative/protocol.ts';
import type { GenerationResult } from '../../../src/pipelines/generation/generation-progress.ts';
import type {
  SegmentJob,
  SegmentwiseGenerator,
} from '../../../src/pipelines/generation/segmentwise.ts';
import { SegmentLoop } from '../../../src/generative/segment-loop.ts';
import {
  SpeechRecognitionPipeline,
  type SpeechRecognitionOptions,
} from '../../../src/pipelines/audio/speech-recognition.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { readGoldens, type GoldenCase } from '../../parity/goldens.ts';
import { longSignal } from '../../helpers/long-signal.ts';

const MODEL = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'whisper-speech-recognition',
);
const GREEDY: SpeechRecognitionOptions = {
  language: 'en',
  task: 'transcribe',
  maxNewTokens: 20,
  numBeams: 1,
};
const store = new ModelStore();
afterAll(() => store.close());

function golden(name: string): GoldenCase {
  const found = readGoldens('whisper-speech-recognition').pipeline.find((g) => g.name === name);
  expect(found).toBeDefined();
  return found as GoldenCase;
}

async function pipelineOf(options: SpeechRecognitionOptions): Promise<SpeechRecognitionPipeline> {
  return new SpeechRecognitionPipeline(await store.load({ path: MODEL }), options);
}

async function runToIdle(loop: SegmentLoop, steps: SequenceEvent[][]): Promise<void> {
  for (let n = 0; !loop.idle; n += 1) {
    expect(n).toBeLessThan(50);
    steps.push(await loop.step());
  }
}

function tokensOf(events: readonly SequenceEvent[], id: number) {
  return events.flatMap((e) => (e.kind === 'token' && e.id === id ? [e] : []));
}

describe('SegmentLoop (speech recognition)', () => {
  it("runs clips that join mid-clip beside the others; each result is Python's", async () => {
    const { call, output } = golden('greedy_en');
    const clips = (call.inputs as string[]).map((clip) => join(MODEL, clip));
    const expected = output as { text: string }[];
    const pipeline = await pipelineOf(GREEDY);
    const batch = await pipeline.generateTokens(clips);
    const loop = await SegmentLoop.create(pipeline, { maxActive: 2 });
    const steps: SequenceEvent[][] = [];
    await loop.submit({ id: 0, input: clips[0] });
    steps.push(await loop.step());
    expect(loop.stats()).toMatchObject({ active: 1, waiting: 0 });
    for (const id of [1, 2]) await loop.submit({ id, input: clips[id] });
    steps.push(await loop.step());
    expect(loop.stats().active).toBeLessThanOrEqual(2);
    await runToIdle(loop, steps);
    const events = steps.flat();
    for (const [id, { text }] of expected.entries()) {
      const done = events.find((e) => e.kind === 'done' && e.id === id);
      expect(done?.kind === 'done' && done.result.text).toBe(text);
      expect(done?.kind === 'done' && done.result.tokenIds).toEqual(batch[id]?.tokens);
      const tokens = tokensOf(events, id);
      expect(tokens.map((e) => e.text).join('')).toBe(text);
      expect(tokens.map((e) => e.tokenId)).toEqual(batch[id]?.tokens);
      expect(tokens.map((e) => e.index)).toEqual(tokens.map((_, i) => i));
    }
    // The first clip's first segment ended before the others started: its kept text streamed
    // then, before Python's second pass over the rest of the clip.
    const first = steps[0] ?? [];
    expect(first.some((e) => e.kind === 'done')).toBe(false);
    expect(
      tokensOf(first, 0)
        .map((e) => e.text)
        .join(''),
    ).toBe('\ufffdhehe');
  });

  it('streams a 45 s clip segment by segment, ending with its timestamped chunks', async () => {
    const { output } = golden('long_form_sequential');
    const expected = (output as { text: string; chunks: unknown[] }[])[0];
    const pipeline = await pipelineOf({ ...GREEDY, returnTimestamps: true });
    const loop = await SegmentLoop.create(pipeline, { maxActive: 4 });
    await loop.submit({ id: 7, input: { pcm: longSignal(), samplingRate: 16_000 } });
    const steps: SequenceEvent[][] = [];
    await runToIdle(loop, steps);
    const done = steps.flat().find((e) => e.kind === 'done');
    expect(done?.kind === 'done' && done.result.text).toBe(expected?.text);
    expect(done?.kind === 'done' && done.result.chunks).toEqual(expected?.chunks);
    expect(steps.length).toBeGreaterThan(1);
    // Tokens came out at more than one step before the last: the clip streamed.
    const streamedSteps = steps.slice(0, -1).filter((s) => tokensOf(s, 7).length > 0);
    expect(streamedSteps.length).toBeGreaterThan(0);
    const texts = tokensOf(steps.flat(), 7).map((e) => e.text);
    expect(texts.join('')).toBe(expected?.text);
  });

  it('a cancelled clip fails at the next step; the others go on', async () => {
    const pipeline = await pipelineOf({ ...GREEDY, returnTimestamps: true });
    const loop = await SegmentLoop.create(pipeline, { maxActive: 4 });
    const clip = { pcm: longSignal(), samplingRate: 16_000 };
    await loop.submit({ id: 1, input: clip });
    await loop.submit({ id: 2, input: clip });
    await loop.step();
    loop.cancel(1, 'aborted');
    const steps: SequenceEvent[][] = [];
    await runToIdle(loop, steps);
    const events = steps.flat();
    const failed = events.find((e) => e.kind === 'failed' && e.id === 1);
    expect(failed?.kind === 'failed' && failed.error.name).toBe('CancelledError');
    expect(events.some((e) => e.kind === 'done' && e.id === 2)).toBe(true);
    expect(events.some((e) => e.id === 1 && e.kind !== 'failed')).toBe(false);
  });

  it('an unreadable clip fails at submit; per-request options are refused', async () => {
    const loop = await SegmentLoop.create(await pipelineOf(GREEDY), { maxActive: 2 });
    const bad = await loop.submit({ id: 3, input: new Uint8Array([1, 2, 3, 4]) });
    expect(bad?.kind === 'failed' && bad.error.name).toBe('InputError');
    const options = await loop.submit({
      id: 4,
      input: join(MODEL, 'audio', 'tone_2s.wav'),
      options: { maxNewTokens: 3 },
    });
    expect(options?.kind === 'failed' && options.error.message).toMatch(/generation\.optionsField/);
    expect(loop.idle).toBe(true);
  });

  it('chunked transcription is refused at start, naming options.chunkLengthS', async () => {
    const pipeline = await pipelineOf({ ...GREEDY, chunkLengthS: 10 });
    const refused = SegmentLoop.create(pipeline, { maxActive: 2 });
    await expect(refused).rejects.toBeInstanceOf(ConfigError);
    await expect(refused).rejects.toMatchObject({ field: 'options.chunkLengthS' });
  });
});

/** Jobs whose segments keep the given tokens, with texts as a byte-level decode would give. */
class ScriptedSegments implements SegmentwiseGenerator<ScriptedJob> {
  readonly task = 'automaticSpeechRecognition';
  private readonly segments: { tokens: number[]; text: string }[];
  constructor(segments: { tokens: number[]; text: string }[]) {
    this.segments = segments;
  }
  assertSegmentwise(): Promise<void> {
    return Promise.resolve();
  }
  startJob(): Promise<ScriptedJob> {
    return Promise.resolve({ tokens: [], done: false, step: 0, text: '' });
  }
  advance(jobs: readonly ScriptedJob[]): Promise<void> {
    for (const job of jobs) {
      const segment = this.segments[job.step++];
      job.tokens.push(...(segment?.tokens ?? []));
      job.text = segment?.text ?? job.text;
      job.done = job.step >= this.segments.length;
    }
    return Promise.resolve();
  }
  textOf(job: ScriptedJob): Promise<string> {
    return Promise.resolve(job.text);
  }
  result(job: ScriptedJob): Promise<GenerationResult> {
    return Promise.resolve({
      text: job.text,
      tokenIds: [...job.tokens],
      finishReason: 'eos',
      promptTokens: 4,
      generatedTokens: job.tokens.length,
    });
  }
}

interface ScriptedJob extends SegmentJob {
  tokens: number[];
  done: boolean;
  step: number;
  text: string;
}

describe('SegmentLoop (streamed text)', () => {
  async function streamed(segments: { tokens: number[]; text: string }[]) {
    const loop = await SegmentLoop.create(new ScriptedSegments(segments), { maxActive: 1 });
    await loop.submit({ id: 1, input: 'clip' });
    const steps: SequenceEvent[][] = [];
    await runToIdle(loop, steps);
    return steps.map((s) => tokensOf(s, 1).map((e) => e.text));
  }

  it('holds back bytes that may still become a character until the next segment', async () => {
    // 'é' is two bytes; its first ended segment 1 and decoded as U+FFFD.
    const steps = await streamed([
      { tokens: [10, 11, 12], text: 'ab\ufffd' },
      { tokens: [13, 14], text: 'abécd' },
    ]);
    expect(steps[0]?.join('')).toBe('ab');
    expect(steps.flat().join('')).toBe('abécd');
  });

  it('a last segment that keeps nothing still delivers the held-back text', async () => {
    const steps = await streamed([
      { tokens: [10, 11, 12], text: 'ab\ufffd' },
      { tokens: [], text: 'ab\ufffd' },
    ]);
    expect(steps[0]).toEqual(['ab', '']);
    expect(steps[1]).toEqual(['\ufffd']);
  });
});
