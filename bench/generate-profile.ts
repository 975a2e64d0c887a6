// `npx node bench/generate-profile.ts [--model smollm2] [--no-cache]`: where one generation
// thread's time goes on bench:generate's shared-prefix workload. It replays one thread's share
// of the pass (every other of BENCH_SHARED_REQUESTS prompts, arriving over BENCH_ARRIVAL_MS)
// through a GenerationLoop on this thread with one intra-op thread, as a generation thread runs
// it, and adds up this thread's CPU time (process.threadCpuUsage: other processes' load inflates
// it far less than wall time) per kind of work. Decode and prefill runs are told apart by their
// input width (one token per row or a prompt chunk); the rest of a step is host work
// (re-assembly, prefix lookups and stores, token choice). docs/generative.md has the figures.
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Feeds, Outputs } from '../src/runtime/session.ts';
import type { Tensor } from '../src/runtime/tensor.ts';
import { GenerationLoop } from '../src/generative/generation-loop.ts';
import { compileSchedulerOptions } from '../src/generative/scheduler.ts';
import { TextGenerationPipeline } from '../src/pipelines/generation/text-generation.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { modelFolder, sharedPrefixPrompts } from './lib/generate-workloads.ts';
import { writeResultLine } from './lib/run-record.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const { values: args } = parseArgs({
  options: { model: { type: 'string' }, 'no-cache': { type: 'boolean' } },
});
const MODEL = modelFolder(args.model ?? process.env['BENCH_MODEL'] ?? 'smollm2');
const REQUESTS = env('BENCH_SHARED_REQUESTS', 64);
const ARRIVAL_MS = env('BENCH_ARRIVAL_MS', 2000);
const NEW_TOKENS = env('BENCH_SHARED_NEW_TOKENS', 32);
const CORPUS = process.env['BENCH_CORPUS'] ?? '.cache/corpus/spam-assassin.jsonl';

const cpuMs = (): number => {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
};

const store = new ModelStore();
const model = await store.load({ path: MODEL, runtime: { intraOpThreads: 1 } });
const pipeline = new TextGenerationPipeline(
  model,
  {},
  { prefixCache: args['no-cache'] === true ? { maxBytes: 0 } : {} },
);
const tokenizer = model.tokenizer;
if (tokenizer === undefined) throw new Error(`${MODEL} has no tokenizer`);

// Every session.run, by kind: decode (one new token per row) or prefill (a prompt chunk).
const runs = {
  decode: { runs: 0, cpuMs: 0, rows: 0, tokenRows: 0 },
  prefill: { runs: 0, cpuMs: 0, tokens: 0 },
};
const { session } = model;
const run: (feeds: Feeds, fetches: readonly string[]) => Promise<Outputs> =
  session.run.bind(session);
Object.assign(session, {
  run: async (feeds: Feeds, fetches: readonly string[]) => {
    const ids = feeds['input_ids'] as Tensor;
    const mask = feeds['attention_mask'] as Tensor;
    const [rows = 0, width = 0] = ids.dims;
    const started = cpuMs();
    const out = await run(feeds, fetches);
    const spent = cpuMs() - started;
    if (width === 1) {
      runs.decode.runs += 1;
      runs.decode.cpuMs += spent;
      runs.decode.rows += rows;
      runs.decode.tokenRows += rows * ((mask.dims[1] ?? 1) - 1);
    } else {
      runs.prefill.runs += 1;
      runs.prefill.cpuMs += spent;
      runs.prefill.tokens += rows * width;
    }
    return out;
  },
});

const texts = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text)
  .filter((text) => text.length > 2000);
const records: string[] = [];
for (let i = 0; i < REQUESTS; i += 1) {
  const [encoded] = await tokenizer.encode([texts[(i * 37) % texts.length] as string], {
    truncation: false,
    addSpecialTokens: false,
  });
  records.push(await tokenizer.decode((encoded?.ids ?? []).slice(0, 400), true));
}
const prompts = await sharedPrefixPrompts(tokenizer, records, 300, [16, 48, 96, 160]);
// The engine hands requests to its threads in turn: one thread sees every other one.
const mine = prompts
  .map((text, i) => ({ text, at: (i * ARRIVAL_MS) / REQUESTS }))
  .filter((_, i) => i % 2 === 0);
let longest = 0;
for (const { text } of mine)
  longest = Math.max(longest, (await pipeline.promptIds({ kind: 'text', text }, undefined)).length);
const kvPerRequest = longest + NEW_TOKENS;
const loop = new GenerationLoop(
  pipeline,
  compileSchedulerOptions({
    maxActive: 32,
    stepTokens: env('BENCH_STEP_TOKENS', 256),
    maxKvTokens: 32 * (kvPerRequest + 32),
  }),
);
await loop.submit({ id: -1, input: 'warm up', options: { maxNewTokens: 2 } });
while (!loop.idle) await loop.step();
runs.decode = { runs: 0, cpuMs: 0, rows: 0, tokenRows: 0 };
runs.prefill = { runs: 0, cpuMs: 0, tokens: 0 };

const options = { maxNewTokens: NEW_TOKENS, minNewTokens: NEW_TOKENS };
const started = performance.now();
const cpuStarted = cpuMs();
const ttft: number[] = [];
let steps = 0;
let tokens = 0;
let next = 0;
while (next < mine.length || !loop.idle) {
  const now = performance.now() - started;
  for (; next < mine.length && (mine[next]?.at ?? 0) <= now; next += 1)
    await loop.submit({ id: next, input: mine[next]?.text, options });
  if (loop.idle) {
    await new Promise((resolve) => setTimeout(resolve, 5));
    continue;
  }
  const events = await loop.step();
  steps += 1;
  for (const event of events) {
    if (event.kind === 'failed') throw new Error(event.error.message);
    if (event.kind !== 'token') continue;
    tokens += 1;
    if (event.index === 0) ttft.push(steps);
  }
}
const total = cpuMs() - cpuStarted;
const seconds = (ms: number): number => Math.round(ms / 10) / 100;
ttft.sort((a, b) => a - b);
writeResultLine({
  bench: 'generate-profile',
  model: MODEL,
  prefixCache: args['no-cache'] !== true,
  requests: mine.length,
  tokens,
  steps,
  wall_s: seconds(performance.now() - started),
  cpu_s: seconds(total),
  decode: { ...runs.decode, cpuMs: undefined, cpu_s: seconds(runs.decode.cpuMs) },
  prefill: { ...runs.prefill, cpuMs: undefined, cpu_s: seconds(runs.prefill.cpuMs) },
  host_cpu_s: seconds(total - runs.decode.cpuMs - runs.prefill.cpuMs),
  first_token_step: { p50: ttft[Math.floor(ttft.length / 2)], last: ttft.at(-1) },
  prefix_cache: pipeline.prefixCache?.stats(),
});
await store.close();
