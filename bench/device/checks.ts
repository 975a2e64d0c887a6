// The GPU paths' checks, for the device call (bench/device/run.sh) before its benchmarks:
//   pooling:    featureExtraction with pooling on the device (a linked run into the pooling graph)
//               against pooling on the host, both on the device, and against the CPU path;
//   staging:    featureExtraction with its feeds staged in the device's pinned host buffers
//               (runtime.feedsFrom: staging) against feeds read from JS memory, and the memory
//               the buffers are in ('CudaPinned' on a GPU);
//   resident:   the decode loop with its cache resident on the device (runtime.kvOn: device),
//               continuously batched, against the CPU loop on the host: greedy tokens identical,
//               no host copy of the cache, no resident value left live;
//   prefix:     the same loop with the prefix cache on, prompts that share an instruction: the
//               resident loop keeps the cache's blocks on the device (cut and joined there), and
//               its greedy tokens must still be the CPU loop's; hits and tokens saved, and no value
//               left live once the loop closes.
// `--device cpu` runs the same flow on the CPU provider (the dry run; kvOn and poolingOn forced to
// device, feedsFrom to staging). BENCH_EMBED_MODEL (MiniLM), BENCH_MODEL (llama-100m, or smollm2, or a folder),
// CHECK_PROMPTS (8), CHECK_NEW_TOKENS (64). Prints one JSON line.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GenerationLoop } from '../../src/generative/generation-loop.ts';
import type { SequenceEvent } from '../../src/generative/protocol.ts';
import { compileSchedulerOptions } from '../../src/generative/scheduler.ts';
import type { PrefixCacheStats } from '../../src/pipelines/generation/prefix-cache.ts';
import { TextGenerationPipeline } from '../../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../../src/pipelines/runtime/model-store.ts';
import { FeatureExtractionPipeline } from '../../src/pipelines/text/feature-extraction.ts';
import { createNativeSession } from '../../src/runtime/native/open-session.ts';
import { residentStats } from '../../src/runtime/native/resident-value.ts';
import { stagingStats } from '../../src/runtime/native/staging-buffers.ts';
import { compileRuntimeOptions, type RuntimeOptions } from '../../src/runtime/runtime-options.ts';
import { loadTexts } from '../lib/corpus.ts';
import { modelFolder } from '../lib/generate-workloads.ts';
import { writeResultLine } from '../lib/run-record.ts';
import { maxAbsDiff } from '../lib/stats.ts';

const { values: args } = parseArgs({ options: { device: { type: 'string', default: 'cuda:0' } } });
const cuda = /^cuda:(\d+)$/.exec(args.device);
if (cuda === null && args.device !== 'cpu')
  throw new Error(`--device takes cuda:<id> or cpu, not '${args.device}'`);
const device: RuntimeOptions =
  cuda === null ? {} : { executionProviders: [{ name: 'cuda', deviceId: Number(cuda[1]) }] };
const EMBED = process.env['BENCH_EMBED_MODEL'] ?? join('.cache', 'models', 'all-MiniLM-L6-v2');
const MODEL = modelFolder(process.env['BENCH_MODEL'] ?? 'llama-100m');
const PROMPTS = Number(process.env['CHECK_PROMPTS'] ?? 8);
const NEW_TOKENS = Number(process.env['CHECK_NEW_TOKENS'] ?? 64);

const store = new ModelStore();

async function embed(runtime: RuntimeOptions, texts: readonly string[]): Promise<Float32Array[]> {
  const model = await store.load({ path: EMBED, onnxFile: 'model.onnx', runtime });
  const pipeline = new FeatureExtractionPipeline(model);
  const out: Float32Array[] = [];
  for (let i = 0; i < texts.length; i += 32)
    out.push(...((await pipeline.run(texts.slice(i, i + 32))) as Float32Array[]));
  return out;
}

const worst = (a: readonly Float32Array[], b: readonly Float32Array[]): number =>
  Math.max(...a.map((v, i) => maxAbsDiff(v, b[i] ?? new Float32Array())));

const texts = loadTexts(128);
const onDevice = await embed({ ...device, poolingOn: 'device' }, texts);
const hostPooled = await embed({ ...device, poolingOn: 'host' }, texts);
const cpuPath = await embed({ poolingOn: 'host' }, texts);
const pooling = {
  texts: texts.length,
  device_vs_host_pooling_max_abs_diff: worst(onDevice, hostPooled),
  device_vs_cpu_max_abs_diff: worst(onDevice, cpuPath),
};

// 'auto' stages on a GPU, and falls back to JS memory (reported) where the session has no pinned
// allocator; on CPU only a named 'staging' stages.
const feedsFrom = cuda === null ? 'staging' : 'auto';
const stagedBefore = stagingStats();
const stagedVectors = await embed({ ...device, poolingOn: 'device', feedsFrom }, texts);
const stagedAfter = stagingStats();
const jsVectors = await embed({ ...device, poolingOn: 'device', feedsFrom: 'js' }, texts);
const probe = createNativeSession(
  join(EMBED, 'model.onnx'),
  compileRuntimeOptions({ ...device, feedsFrom }),
);
const staging = {
  memory: probe.stagingMemory() ?? null,
  fallback: probe.stagingProblem ?? null,
  staged_vs_js_max_abs_diff: worst(stagedVectors, jsVectors),
  buffers_allocated: stagedAfter.allocations - stagedBefore.allocations,
};
await probe.release();

/** Every prompt through one loop, one arriving per step: each request's token ids. */
async function loopTokens(
  runtime: RuntimeOptions,
  prompts: readonly string[],
  prefixCache = false,
): Promise<{ tokens: number[][]; prefix: PrefixCacheStats }> {
  const model = await store.load({ path: MODEL, runtime });
  const gen = new TextGenerationPipeline(model, {}, prefixCache ? { prefixCache: {} } : {});
  const loop = new GenerationLoop(gen, compileSchedulerOptions({ maxActive: 8, stepTokens: 64 }));
  const events: SequenceEvent[] = [];
  for (let step = 0; step < prompts.length || !loop.idle; step += 1) {
    const prompt = prompts[step];
    if (prompt !== undefined) {
      const failed = await loop.submit({
        id: step,
        input: prompt,
        options: { maxNewTokens: NEW_TOKENS, minNewTokens: NEW_TOKENS, doSample: false },
      });
      if (failed !== undefined) events.push(failed);
    }
    events.push(...(await loop.step()));
  }
  const failed = events.filter((e) => e.kind === 'failed');
  if (failed.length > 0) throw new Error(`generation failed: ${JSON.stringify(failed[0])}`);
  const done = new Map(
    events.flatMap((e) => (e.kind === 'done' ? [[e.id, e.result] as const] : [])),
  );
  const prefix = loop.stats().prefixCache;
  await loop.close();
  return { tokens: prompts.map((_, i) => done.get(i)?.tokenIds ?? []), prefix };
}

/** How many of `got` are `NEW_TOKENS` long and equal to `expected`'s. */
const identicalCount = (got: number[][], expected: number[][]): number =>
  got.filter(
    (ids, i) => ids.length === NEW_TOKENS && JSON.stringify(ids) === JSON.stringify(expected[i]),
  ).length;

// Real e-mails cut to a cycle of lengths, so that rows of different spans join one batch.
const CUTS = [80, 250, 500, 900];
const prompts = loadTexts(PROMPTS, 7).map((text, i) => text.slice(0, CUTS[i % CUTS.length]));
const before = residentStats();
const residentTokens = (await loopTokens({ ...device, kvOn: 'device' }, prompts)).tokens;
const after = residentStats();
const cpuTokens = (await loopTokens({ kvOn: 'host' }, prompts)).tokens;
const identical = identicalCount(residentTokens, cpuTokens);

// Records after one instruction, long enough to fill several 16-token blocks.
const INSTRUCTION =
  'You sort e-mails for a support team. Read the e-mail below and answer with its category ' +
  '(billing, bug report, account, sales or other), then its urgency, then what the sender wants ' +
  'in at most ten words, without greeting and without inventing anything.\n\nE-mail: ';
const templated = prompts.map((prompt) => INSTRUCTION + prompt.slice(0, 200));
const prefixBefore = residentStats();
const prefixResident = await loopTokens({ ...device, kvOn: 'device' }, templated, true);
const prefixAfter = residentStats();
const prefixCpu = await loopTokens({ kvOn: 'host' }, templated, true);
await store.close();

writeResultLine({
  bench: 'device-checks',
  device: args.device,
  embed_model: EMBED,
  model: MODEL,
  pooling,
  staging,
  resident: {
    greedy_identical_to_cpu: `${identical}/${prompts.length}`,
    new_tokens: NEW_TOKENS,
    host_copies: after.hostCopies - before.hostCopies,
    live_values_left: after.live - before.live,
  },
  prefix: {
    greedy_identical_to_cpu: `${identicalCount(prefixResident.tokens, prefixCpu.tokens)}/${templated.length}`,
    hits: prefixResident.prefix.hits,
    tokens_saved: prefixResident.prefix.tokensSaved,
    cpu_hits: prefixCpu.prefix.hits,
    host_copies: prefixAfter.hostCopies - prefixBefore.hostCopies,
    live_values_left: prefixAfter.live - prefixBefore.live,
  },
});
