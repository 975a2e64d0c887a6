// Encoder–decoder caches resident on the session's device (runtime.kvOn: device), the path a GPU
// engine takes by default, here on CPU memory: the self- and cross-attention caches stay where
// the decoder made them between steps, finished rows and reordered beams are gathered by the window
// graph on the device, and the decoder frees them when its rows are done. Outputs must be Python's
// (the same goldens as the host path) for BART continuously batched on the cohort loop, for
// BART's beam search, and for Whisper's segments, with no host copy and no value left live. On
// onnxruntime-node (the second parity project) the same runs take the host path.
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CohortLoop } from '../../src/generative/cohort-loop.ts';
import type { SequenceEvent } from '../../src/generative/protocol.ts';
import { SpeechRecognitionPipeline } from '../../src/pipelines/audio/speech-recognition.ts';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import { Seq2SeqTextPipeline } from '../../src/pipelines/seq2seq/seq2seq-text-pipeline.ts';
import { residentStats } from '../../src/runtime/native/resident-value.ts';
import { modelPath, readGoldens } from './goldens.ts';

const store = new ModelStore();
afterAll(() => store.close());
const resident = { kvOn: 'device' as const };

/** Runs `use`; on our binding, nothing may come to the host and nothing may stay live. */
async function withoutLeaks<T>(use: () => Promise<T>): Promise<T> {
  const before = residentStats();
  const result = await use();
  const after = residentStats();
  // Ours kept the caches resident; onnxruntime-node has no resident runs and made none.
  if (process.env['HUGOT_ORT_BINDING'] === 'onnxruntime-node') expect(after.made).toBe(before.made);
  else expect(after.made).toBeGreaterThan(before.made);
  expect(after.live).toBe(before.live);
  expect(after.hostCopies).toBe(before.hostCopies);
  return result;
}

function summaries(name: string): { inputs: string[]; texts: string[] } {
  const case_ = readGoldens('bart-summarization').pipeline.find(
    (g) => g.name === `summarization:${name}`,
  );
  const inputs = (case_?.call.inputs ?? []) as string[];
  const texts = ((case_?.output ?? []) as { summary_text: string }[]).map((o) => o.summary_text);
  expect(inputs.length).toBeGreaterThan(1);
  return { inputs, texts };
}

describe('encoder–decoder caches resident on the device', () => {
  it("BART on the cohort loop, requests joining mid-decode and leaving apart: Python's summaries", async () => {
    const { inputs, texts } = summaries('greedy');
    const model = await store.load({ path: modelPath('bart-summarization'), runtime: resident });
    const pipeline = new Seq2SeqTextPipeline('summarization', model, {
      maxNewTokens: 16,
      numBeams: 1,
      doSample: false,
    });
    const events = await withoutLeaks(async () => {
      const loop = await CohortLoop.create(pipeline, { maxActive: 3 });
      const out: SequenceEvent[] = [];
      for (const id of [0, 1]) await loop.submit({ id, input: inputs[id] });
      out.push(...(await loop.step()), ...(await loop.step()));
      for (let id = 2; id < inputs.length; id += 1) await loop.submit({ id, input: inputs[id] });
      for (let n = 0; !loop.idle; n += 1) {
        expect(n).toBeLessThan(100);
        out.push(...(await loop.step()));
      }
      return out;
    });
    for (const [id, text] of texts.entries()) {
      const done = events.find((e) => e.kind === 'done' && e.id === id);
      expect(done?.kind === 'done' && done.result.text, `request ${id}`).toBe(text);
    }
  });

  it("BART's beam search, beams reordered on the device every step: Python's summaries", async () => {
    const case_ = readGoldens('bart-summarization').pipeline.find((g) => /beam/.test(g.name));
    expect(case_).toBeDefined();
    const call = case_?.call as unknown as {
      inputs: string[];
      options: { num_beams: number; max_new_tokens?: number };
    };
    const texts = (case_?.output as { summary_text: string }[]).map((o) => o.summary_text);
    const model = await store.load({ path: modelPath('bart-summarization'), runtime: resident });
    const pipeline = new Seq2SeqTextPipeline('summarization', model, {
      numBeams: call.options.num_beams,
      ...(call.options.max_new_tokens === undefined
        ? {}
        : { maxNewTokens: call.options.max_new_tokens }),
    });
    const out = await withoutLeaks(() => pipeline.run(call.inputs));
    expect(out.map((o) => o.summaryText)).toEqual(texts);
  });

  it("Whisper's segments: the host path's transcripts (Python's)", async () => {
    const golden = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) =>
        (g.call as { options?: { chunk_length_s?: number } }).options?.chunk_length_s === undefined,
    );
    expect(golden).toBeDefined();
    const call = golden?.call as unknown as {
      inputs: string[];
      generate_kwargs: { max_new_tokens: number; num_beams: number };
    };
    const model = await store.load({
      path: modelPath('whisper-speech-recognition'),
      runtime: resident,
    });
    const pipeline = new SpeechRecognitionPipeline(model, {
      maxNewTokens: call.generate_kwargs.max_new_tokens,
      numBeams: call.generate_kwargs.num_beams,
    });
    const inputs = call.inputs.map((item) => join(modelPath('whisper-speech-recognition'), item));
    const out = await withoutLeaks(() => pipeline.run(inputs));
    // The host path's transcripts are Python's (speech-recognition.parity.test.ts).
    const host = new SpeechRecognitionPipeline(
      await store.load({
        path: modelPath('whisper-speech-recognition'),
        runtime: { kvOn: 'host' },
      }),
      {
        maxNewTokens: call.generate_kwargs.max_new_tokens,
        numBeams: call.generate_kwargs.num_beams,
      },
    );
    expect(out).toEqual(await host.run(inputs));
    expect(out.length).toBe(inputs.length);
  });
});
