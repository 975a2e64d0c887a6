// The continuously batched step loop against Python's generate() goldens: each prompt alone, and
// interleaved with requests of other lengths that arrive, prefill in chunks, and leave at
// different steps. Sampling with a seed must not depend on who a request is batched with.
import { describe, expect, it } from 'vitest';
import { GenerationLoop, type SubmitRequest } from '../../src/generative/generation-loop.ts';
import type { SequenceEvent } from '../../src/generative/protocol.ts';
import { compileSchedulerOptions, type SchedulerOptions } from '../../src/generative/scheduler.ts';
import type { GenerationResult } from '../../src/pipelines/generation/generation-progress.ts';
import { TextGenerationPipeline } from '../../src/pipelines/generation/text-generation.ts';
import { readGoldens } from './goldens.ts';
import { GOLDEN, RERUN } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'llama-causal-lm';
const load = useModelStore();

interface GenerationGolden {
  name: string;
  call: { prompt: string | string[]; options: { max_new_tokens: number } };
  new_ids: number[] | number[][];
}
const singles = (
  readGoldens(MODEL) as unknown as { generation: GenerationGolden[] }
).generation.filter((g) => typeof g.call.prompt === 'string');

const FILLER =
  'Dear friend, this is a long message about the quarterly report, the budget, the meeting ' +
  'schedule for next week and several other things that make the prompt much longer than the rest';

interface Run {
  results: Map<number, GenerationResult>;
  events: SequenceEvent[];
  steps: number;
}

/** Drives the loop step by step; `arrivals[s]` are submitted just before step s. */
async function drive(
  limits: SchedulerOptions,
  arrivals: Record<number, SubmitRequest[]>,
): Promise<Run> {
  const loop = new GenerationLoop(
    new TextGenerationPipeline(await load(MODEL)),
    compileSchedulerOptions(limits),
  );
  const last = Math.max(...Object.keys(arrivals).map(Number));
  const events: SequenceEvent[] = [];
  let step = 0;
  for (; step <= last || !loop.idle; step += 1) {
    for (const request of arrivals[step] ?? []) {
      const failed = await loop.submit(request);
      if (failed !== undefined) events.push(failed);
    }
    events.push(...(await loop.step()));
    if (step > 500) throw new Error('the loop did not finish');
  }
  const results = new Map<number, GenerationResult>();
  for (const e of events) if (e.kind === 'done') results.set(e.id, e.result);
  return { results, events, steps: step };
}

const greedy = (maxNewTokens: number): SubmitRequest['options'] => ({ maxNewTokens });

describe('generative engine step loop', () => {
  it('each golden prompt alone gives generate()’s greedy ids', GOLDEN, async () => {
    for (const [i, golden] of singles.entries()) {
      const { results } = await drive(
        {},
        {
          0: [{ id: i, input: golden.call.prompt, options: greedy(24) }],
        },
      );
      expect(results.get(i)?.tokenIds, golden.name).toEqual(golden.new_ids);
    }
  });

  // One padded decode batch, and decode rows split into length groups at every opportunity.
  for (const decodeRunCostTokens of [1e9, 0]) {
    it(
      `interleaved with ragged requests arriving and leaving at different steps: same ids (decodeRunCostTokens ${decodeRunCostTokens})`,
      RERUN,
      async () => {
        // A small step budget forces the long filler prompts through several prefill chunks while
        // others decode; maxActive 4 makes later arrivals wait in the admission queue.
        const limits = { maxActive: 4, stepTokens: 12, maxKvTokens: 400, decodeRunCostTokens };
        const arrivals: Record<number, SubmitRequest[]> = {
          0: [
            { id: 100, input: FILLER, options: greedy(5) },
            { id: 0, input: singles[0]!.call.prompt, options: greedy(24) },
          ],
          2: [{ id: 1, input: singles[1]!.call.prompt, options: greedy(24) }],
          3: [
            { id: 101, input: 'Hi', options: greedy(3) },
            { id: 2, input: singles[2]!.call.prompt, options: greedy(24) },
          ],
          7: [
            { id: 102, input: `${FILLER} ${FILLER}`, options: greedy(9) },
            { id: 3, input: singles[3]!.call.prompt, options: greedy(24) },
          ],
          11: [{ id: 103, input: 'Short one', options: greedy(30) }],
        };
        const run = await drive(limits, arrivals);
        singles.forEach((golden, i) => {
          expect(run.results.get(i)?.tokenIds, golden.name).toEqual(golden.new_ids);
        });
        expect(run.results.get(101)?.generatedTokens).toBe(3);
        expect(run.results.get(102)?.generatedTokens).toBe(9);
        // The interleaving really happened: tokens of different requests alternate step by step.
        const order = run.events.filter((e) => e.kind === 'token').map((e) => e.id);
        const switches = order.filter((id, i) => i > 0 && id !== order[i - 1]).length;
        expect(switches).toBeGreaterThan(50);
        // Each filler alone must give the same ids as in the crowd.
        const alone = await drive(
          {},
          { 0: [{ id: 102, input: `${FILLER} ${FILLER}`, options: greedy(9) }] },
        );
        expect(run.results.get(102)?.tokenIds).toEqual(alone.results.get(102)?.tokenIds);
      },
    );
  }

  // The engine chooses through GenerationProgress as the single-request path does, so Python's
  // no_repeat_ngram_size (over prompt + output) holds for a request in a crowd too.
  it('a per-request noRepeatNgramSize gives generate()’s ids, interleaved', GOLDEN, async () => {
    const golden = readGoldens(MODEL).pipeline.find((g) => g.name === 'no_repeat_ngram');
    const prompt = golden?.call.inputs as string;
    const options = golden?.call.options as {
      max_new_tokens: number;
      no_repeat_ngram_size: number;
    };
    const expected = (golden?.output as { generated_text: string }[])[0]?.generated_text;
    const banned = {
      maxNewTokens: options.max_new_tokens,
      noRepeatNgramSize: options.no_repeat_ngram_size,
    };
    const run = await drive(
      { maxActive: 3, stepTokens: 8 },
      {
        0: [{ id: 7, input: FILLER, options: greedy(12) }],
        2: [
          { id: 1, input: prompt, options: banned },
          { id: 2, input: prompt, options: greedy(options.max_new_tokens) },
        ],
      },
    );
    expect(prompt + (run.results.get(1)?.text ?? '')).toBe(expected);
    // The same prompt without the option in the same batch: the ban is per request, and it bit.
    expect(run.results.get(2)?.tokenIds).not.toEqual(run.results.get(1)?.tokenIds);
  });

  it('seeded sampling is the same alone, interleaved, and on the single-request path', async () => {
    const sampled = { seed: 1234, temperature: 1.3, topK: 40, topP: 0.95, maxNewTokens: 20 };
    const prompt = singles[1]!.call.prompt as string;
    const alone = await drive({}, { 0: [{ id: 1, input: prompt, options: sampled }] });
    const crowd = await drive(
      { maxActive: 3, stepTokens: 8 },
      {
        0: [{ id: 7, input: FILLER, options: { seed: 9, temperature: 2, maxNewTokens: 12 } }],
        1: [{ id: 8, input: 'Hello there', options: greedy(6) }],
        4: [{ id: 1, input: prompt, options: sampled }],
      },
    );
    const single = await new TextGenerationPipeline(await load(MODEL)).generate(prompt, sampled);
    expect(alone.results.get(1)?.tokenIds).toHaveLength(20);
    expect(crowd.results.get(1)?.tokenIds).toEqual(alone.results.get(1)?.tokenIds);
    expect(single.tokenIds).toEqual(alone.results.get(1)?.tokenIds);
    // A different seed gives different tokens, so the equalities above are not vacuous.
    const other = await drive(
      {},
      { 0: [{ id: 1, input: prompt, options: { ...sampled, seed: 99 } }] },
    );
    expect(other.results.get(1)?.tokenIds).not.toEqual(alone.results.get(1)?.tokenIds);
  });
});
