// The decode batch's KV cache resident between steps (runtime.kvOn: device): each step's presents
// stay where the session made them and are bound as the next step's past without coming to JS;
// rows joining and leaving are moved by the window and join graphs on the same device.
// It is the native binding's default (GPU or CPU); here it runs on CPU memory, with the CPU's
// OrtMemoryInfo. Greedy tokens must be Python's, token for token, continuously batched, and every
// resident value the loop was handed must be freed by the time it is idle. On onnxruntime-node
// (the second parity project) there is no resident run, and the same loop must take the host path.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import { GenerationLoop } from '../../src/generative/generation-loop.ts';
import type { SequenceEvent } from '../../src/generative/protocol.ts';
import { compileSchedulerOptions } from '../../src/generative/scheduler.ts';
import { TextGenerationPipeline } from '../../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import type { ResidentRun, ResidentTensor } from '../../src/runtime/session.ts';
import { residentStats } from '../../src/runtime/native/resident-value.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { forPipeline, GOLDEN } from './parity-case.ts';
import { readSmolGoldens } from './real-weight-references.ts';

const FOLDER = join(import.meta.dirname, '..', '..', '.cache', 'models', 'smollm2-135m-instruct');
const present = existsSync(join(FOLDER, 'model.onnx'));

describe(
  'smollm2-135m-instruct with a resident decode cache (fetched)',
  forPipeline('textGeneration'),
  () => {
    const store = new ModelStore();
    afterAll(() => store.close());
    const goldens = readSmolGoldens();

    whenFetched(present)(
      'continuously batched, greedy output equals the Python pipeline token for token',
      GOLDEN,
      async () => {
        if (!present) throw missingWeights('smollm2-135m-instruct/model.onnx');
        const model = await store.load({
          path: FOLDER,
          onnxFile: 'model.onnx',
          runtime: { kvOn: 'device' },
        });
        const gen = new TextGenerationPipeline(model);
        expect(gen.layout.appending).toBe(false);
        // Count what the loop is handed and what it frees, on the real session's resident runs.
        const session = model.session;
        const made: ResidentTensor[] = [];
        const released = new Set<ResidentTensor>();
        let fedResident = 0;
        const runResident = session.runResident?.bind(session);
        // Runs that bring their whole outputs to the host: neither prefills nor decodes should.
        let hostRuns = 0;
        const run = session.run.bind(session);
        session.run = (feeds, fetches) => {
          hostRuns += 1;
          return run(feeds, fetches);
        };
        if (runResident !== undefined)
          session.runResident = async (run: ResidentRun) => {
            if (Object.values(run.feeds).some((feed) => made.includes(feed as ResidentTensor)))
              fedResident += 1;
            const out = await runResident(run);
            for (const value of Object.values(out.resident)) {
              made.push(value);
              const release = value.release.bind(value);
              value.release = () => {
                released.add(value);
                release();
              };
            }
            return out;
          };
        const before = residentStats();
        try {
          const loop = new GenerationLoop(
            gen,
            compileSchedulerOptions({ maxActive: 8, stepTokens: 24 }),
          );
          const events: SequenceEvent[] = [];
          for (let step = 0; step < goldens.length || !loop.idle; step += 1) {
            const golden = goldens[step];
            if (golden !== undefined) {
              const failed = await loop.submit({
                id: step,
                input: golden.call.prompt,
                options: { maxNewTokens: golden.call.options.max_new_tokens },
              });
              if (failed !== undefined) events.push(failed);
            }
            events.push(...(await loop.step()));
            expect(step).toBeLessThan(4000);
          }
          expect(events.filter((e) => e.kind === 'failed')).toEqual([]);
          const done = new Map(
            events.flatMap((e) => (e.kind === 'done' ? [[e.id, e.result] as const] : [])),
          );
          expect(goldens.length).toBeGreaterThanOrEqual(4);
          goldens.forEach((golden, id) => {
            expect(done.get(id)?.tokenIds, golden.name).toEqual(golden.new_ids);
          });
          if (runResident === undefined) {
            expect(process.env['HUGOT_ORT_BINDING']).toBe('onnxruntime-node');
            return;
          }
          // Every decode run kept its presents; those after a step where no one joined or left
          // were fed the last step's as they were.
          expect(made.length % gen.layout.presentNames.length).toBe(0);
          const steps = made.length / gen.layout.presentNames.length;
          expect(fedResident).toBeGreaterThan(0);
          expect(fedResident).toBeLessThan(steps);
          expect(made.filter((value) => !released.has(value))).toEqual([]);
          // Rows joined and left by the window and join graphs: nothing came to the host, and
          // every value those made was freed too.
          const after = residentStats();
          expect(after.hostCopies - before.hostCopies).toBe(0);
          expect(after.live).toBe(before.live);
          // Prefills left their caches on the device too: a joining row's was already there.
          expect(hostRuns).toBe(0);
        } finally {
          session.run = run;
          if (runResident !== undefined) session.runResident = runResident;
        }
      },
    );

    whenFetched(present)(
      'with the prefix cache: every prompt twice, rows moving onto shared prefixes, nothing leaked',
      GOLDEN,
      async () => {
        if (!present) throw missingWeights('smollm2-135m-instruct/model.onnx');
        const model = await store.load({
          path: FOLDER,
          onnxFile: 'model.onnx',
          runtime: { kvOn: 'device' },
        });
        const gen = new TextGenerationPipeline(
          model,
          {},
          { prefixCache: { blockTokens: 4, minTokens: 4 } },
        );
        const before = residentStats();
        const loop = new GenerationLoop(
          gen,
          compileSchedulerOptions({ maxActive: 8, stepTokens: 24 }),
        );
        const requests = [...goldens, ...goldens];
        const events: SequenceEvent[] = [];
        for (let step = 0; step < requests.length || !loop.idle; step += 1) {
          const golden = requests[step];
          if (golden !== undefined) {
            const failed = await loop.submit({
              id: step,
              input: golden.call.prompt,
              options: { maxNewTokens: golden.call.options.max_new_tokens },
            });
            if (failed !== undefined) events.push(failed);
          }
          events.push(...(await loop.step()));
          expect(step).toBeLessThan(4000);
        }
        expect(events.filter((e) => e.kind === 'failed')).toEqual([]);
        const done = new Map(
          events.flatMap((e) => (e.kind === 'done' ? [[e.id, e.result] as const] : [])),
        );
        requests.forEach((golden, id) => {
          expect(done.get(id)?.tokenIds, `${golden.name} (request ${id})`).toEqual(golden.new_ids);
        });
        expect(gen.prefixCache?.stats().hits).toBeGreaterThanOrEqual(goldens.length);
        if (model.session.runResident === undefined) return;
        // Idle, the prefix cache's blocks (and its shared prefixes) are still resident, its own;
        // the loop's close frees them with anything else it holds.
        expect(residentStats().live).toBeGreaterThan(before.live);
        // Rows moved onto and off shared prefixes on the device (ResidentRows), not the host.
        expect(residentStats().hostCopies).toBe(before.hostCopies);
        await loop.close();
        expect(residentStats().live).toBe(before.live);
      },
    );
  },
);
