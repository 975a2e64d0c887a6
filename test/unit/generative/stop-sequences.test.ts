// Stop sequences never leak: for every stop taken from what the model would have written (one
// to six characters at many offsets, across token boundaries, spaces and multi-byte characters),
// the result, the streamed token texts and the engine's stream all end right before the stop.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerativeEngine } from '../../../src/generative/generative-engine.ts';
import {
  TextGenerationPipeline,
  type GenerationEvent,
} from '../../../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';

const MODEL = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'llama-causal-lm');
const PROMPTS = ['Hello there', 'Crème brûlée 🍮 和 寿司', 'The meeting is moved'];

/** Stops cut from the text: each length at offsets spread over it, first occurrences only. */
function stopsOf(text: string): string[] {
  const chars = [...text];
  const stops = new Set<string>();
  for (let length = 1; length <= 6; length += 1) {
    for (let at = 1; at + length <= chars.length; at += 3) {
      const stop = chars.slice(at, at + length).join('');
      if (stop.trim() !== '') stops.add(stop);
    }
  }
  return [...stops];
}

describe('stop sequences do not leak', () => {
  const store = new ModelStore();
  let gen: TextGenerationPipeline;
  let engine: GenerativeEngine;
  beforeAll(async () => {
    gen = new TextGenerationPipeline(await store.load({ path: MODEL }), { maxNewTokens: 30 });
    engine = await GenerativeEngine.start({
      model: { path: MODEL },
      generation: { maxNewTokens: 30 },
      intraOpThreads: 1,
    });
  });
  afterAll(async () => {
    await engine.close('abort');
    await store.close();
  });

  it('from the result and the streamed token texts of the pipeline', async () => {
    let checked = 0;
    for (const prompt of PROMPTS) {
      const full = await gen.generate(prompt);
      for (const stop of stopsOf(full.text)) {
        const events: GenerationEvent[] = [];
        for await (const event of gen.stream(prompt, { stopSequences: [stop] })) events.push(event);
        const done = events.at(-1);
        if (done?.type !== 'done') throw new Error('no result');
        const expected = full.text.slice(0, full.text.indexOf(stop));
        expect(done.result.text, `stop ${JSON.stringify(stop)}`).toBe(expected);
        expect(done.result.finishReason).toBe('stop');
        const streamed = events.flatMap((e) => (e.type === 'token' ? [e.text] : [])).join('');
        expect(streamed, `stream, stop ${JSON.stringify(stop)}`).toBe(expected);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(60);
  });

  it('from the generative engine, interleaved', async () => {
    const full = await gen.generate(PROMPTS[1] as string);
    const stops = stopsOf(full.text).slice(0, 24);
    const runs = await Promise.all(
      stops.map(async (stop) => {
        const stream = engine.submit(PROMPTS[1], { generation: { stopSequences: [stop] } });
        let streamed = '';
        for await (const event of stream) if (event.type === 'token') streamed += event.text;
        return { stop, streamed, result: await stream.result };
      }),
    );
    for (const { stop, streamed, result } of runs) {
      const expected = full.text.slice(0, full.text.indexOf(stop));
      expect(result.text, `stop ${JSON.stringify(stop)}`).toBe(expected);
      expect(streamed, `stream, stop ${JSON.stringify(stop)}`).toBe(expected);
    }
  });
});
