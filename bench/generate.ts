// npm run bench:generate — the generative engine against the two ways to serve text generation
// without it, on the ~100M-parameter LM and real e-mail snippets of mixed lengths:
//   sequential: one request at a time through the single-request pipeline;
//   static:     fixed batches of BENCH_STATIC_BATCH, each started once its last member arrived
//               and the previous batch finished, prompts left-padded, all rows stepped together;
//   engine:     GenerativeEngine on a worker thread, requests arriving over BENCH_ARRIVAL_MS.
// Every request generates exactly BENCH_NEW_TOKENS tokens (minNewTokens: the weights are random,
// so EOS could otherwise end one early). Every mode uses the same ONNX thread count.
// Sequential runs every request back to back; BENCH_SEQUENTIAL=N runs an evenly spaced sample of
// N instead (its tokens/s is a rate, so a sample only shortens the run).
// `-- --device cuda:<id>` runs the three modes on that GPU and adds the engine on every CPU core of
// the same machine (gpu_vs_cpu) and a check that greedy tokens are the CPU path's.
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { GenerativeEngine } from '../src/generative/generative-engine.ts';
import { GenerationProgress } from '../src/pipelines/generation/generation-progress.ts';
import {
  emptyKvState,
  leftPad,
  runStep,
  type StepTokens,
} from '../src/pipelines/generation/kv-cache.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { TextGenerationPipeline } from '../src/pipelines/generation/text-generation.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const MODEL = process.env['BENCH_MODEL'] ?? '.cache/models/llama-100m';
const CORPUS = process.env['BENCH_CORPUS'] ?? '.cache/corpus/spam-assassin.jsonl';
const REQUESTS = env('BENCH_REQUESTS', 32);
const NEW_TOKENS = env('BENCH_NEW_TOKENS', 64);
const ARRIVAL_MS = env('BENCH_ARRIVAL_MS', 2000);
const STATIC_BATCH = env('BENCH_STATIC_BATCH', 8);
const SEQUENTIAL = Math.min(REQUESTS, env('BENCH_SEQUENTIAL', REQUESTS));
const { values: args } = parseArgs({ options: { device: { type: 'string' } } });
const DEVICE = args.device ?? 'cpu';
const cuda = /^cuda:(\d+)$/.exec(DEVICE);
if (DEVICE !== 'cpu' && cuda === null)
  throw new Error(`--device takes cpu or cuda:<id>, not '${DEVICE}'`);
const GPU_PROVIDERS =
  cuda === null ? undefined : [{ name: 'cuda' as const, deviceId: Number(cuda[1]) }];
// On a GPU one host thread feeds the device; intra-op threads would only spin.
const THREADS = env('BENCH_INTRA_OP_THREADS', GPU_PROVIDERS ? 1 : availableParallelism());
// Generation threads of the engine, the cores split between them. One loop per core with
// single-threaded kernels is the engine's CPU layout (as for encoder shards): the cache copies of
// a step are single-threaded, so two loops overlap what intra-op threads cannot. The baselines
// are single loops by definition and get all cores as intra-op threads instead.
const ENGINE_THREADS = env('BENCH_ENGINE_THREADS', GPU_PROVIDERS ? 1 : availableParallelism());
const LENGTHS = [16, 48, 96, 160, 256];
const OPTIONS = { maxNewTokens: NEW_TOKENS, minNewTokens: NEW_TOKENS };

/** Per request: when it arrived and when each of its tokens reached the caller. */
interface Trace {
  arrival: number;
  tokens: number[];
}

interface Summary {
  mode: string;
  requests: number;
  tokens: number;
  seconds: number;
  tokensPerSecond: number;
  ttftMs: { p50: number; p95: number };
  itlMs: { p50: number; p95: number };
}

const store = new ModelStore();
const runtime = {
  intraOpThreads: THREADS,
  ...(GPU_PROVIDERS ? { executionProviders: GPU_PROVIDERS } : {}),
};
const pipeline = new TextGenerationPipeline(await store.load({ path: MODEL, runtime }));
const tokenizer = pipeline.model.tokenizer;
if (tokenizer === undefined) throw new Error(`${MODEL} has no tokenizer`);

// Real e-mail bodies cut to a cycle of token lengths, so every mode sees the same ragged mix.
const texts = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text)
  .filter((text) => text.length > 2000);
const prompts: string[] = [];
for (let i = 0; i < REQUESTS; i += 1) {
  const text = texts[(i * 37) % texts.length] as string;
  const [encoded] = await tokenizer.encode([text], { truncation: false, addSpecialTokens: false });
  const ids = (encoded?.ids ?? []).slice(0, LENGTHS[i % LENGTHS.length]);
  prompts.push(await tokenizer.decode(ids, true));
}
const arrivals = prompts.map((_, i) => (i * ARRIVAL_MS) / REQUESTS);

async function sequential(): Promise<Summary> {
  const picked = prompts.filter((_, i) => i % Math.round(REQUESTS / SEQUENTIAL) === 0);
  const traces: Trace[] = [];
  const started = performance.now();
  for (const prompt of picked) {
    const trace: Trace = { arrival: performance.now(), tokens: [] };
    for await (const event of pipeline.stream(prompt, OPTIONS))
      if (event.type === 'token') trace.tokens.push(performance.now());
    traces.push(trace);
  }
  return summarize('sequential', traces, started);
}

async function staticBatches(): Promise<Summary> {
  const { session } = pipeline.model;
  const { layout } = pipeline;
  const settings = await pipeline.settings(OPTIONS);
  const decode = (ids: readonly number[]): Promise<string> => pipeline.decode(ids);
  const started = performance.now();
  const traces: Trace[] = prompts.map((_, i) => ({
    arrival: started + (arrivals[i] ?? 0),
    tokens: [],
  }));
  for (let first = 0; first < prompts.length; first += STATIC_BATCH) {
    const members = prompts.slice(first, first + STATIC_BATCH);
    const lastArrival = traces[first + members.length - 1]?.arrival ?? 0;
    await sleep(Math.max(0, lastArrival - performance.now()));
    const rows = await Promise.all(
      members.map((p) => pipeline.promptIds({ kind: 'text', text: p }, undefined)),
    );
    const progress = rows.map((ids) => new GenerationProgress(ids, settings));
    let state = emptyKvState(layout, rows.length);
    let tokens: StepTokens = leftPad(rows, tokenizer?.padId ?? 0);
    // The batch waits for its longest member: every row steps until all are done.
    while (progress.some((p) => !p.done)) {
      const step = await runStep(session, layout, state, tokens);
      state = step.state;
      const next: number[][] = [];
      const chose: number[] = [];
      for (const [r, p] of progress.entries()) {
        if (p.done) {
          next.push([0]);
          continue;
        }
        const id = p.choose(step.logits[r] as Float32Array);
        await p.accept(id, decode);
        next.push([id]);
        chose.push(r);
      }
      const now = performance.now();
      for (const r of chose) traces[first + r]?.tokens.push(now);
      tokens = { ids: next };
    }
  }
  return summarize(`static(batch ${STATIC_BATCH})`, traces, started);
}

async function engine(
  device = DEVICE,
  engineThreads = ENGINE_THREADS,
  intraOpThreads = Math.max(1, Math.floor(THREADS / ENGINE_THREADS)),
): Promise<Summary> {
  const generative = await GenerativeEngine.start({
    model: { path: MODEL },
    device,
    threads: engineThreads,
    intraOpThreads,
    scheduler: {
      maxActive: 32,
      stepTokens: env('BENCH_STEP_TOKENS', 256),
      maxKvTokens: 32 * (256 + NEW_TOKENS + 32),
      ...(process.env['BENCH_DECODE_RUN_COST'] === undefined
        ? {}
        : { decodeRunCostTokens: env('BENCH_DECODE_RUN_COST', 0) }),
    },
  });
  // Warm the thread's session (first-run allocations) before the clock starts, as the others are.
  await Promise.all(
    Array.from(
      { length: engineThreads },
      () => generative.submit('warm up', { generation: { maxNewTokens: 2 } }).result,
    ),
  );
  const started = performance.now();
  const traces = await Promise.all(
    prompts.map(async (prompt, i) => {
      await sleep(arrivals[i] ?? 0);
      const trace: Trace = { arrival: performance.now(), tokens: [] };
      for await (const event of generative.submit(prompt, { generation: OPTIONS }))
        if (event.type === 'token') trace.tokens.push(event.receivedAt);
      return trace;
    }),
  );
  await generative.close('drain');
  return summarize(
    `engine(${device}, ${engineThreads} thread${engineThreads > 1 ? 's' : ''})`,
    traces,
    started,
  );
}

function summarize(mode: string, traces: Trace[], started: number): Summary {
  const tokens = traces.reduce((n, t) => n + t.tokens.length, 0);
  const end = Math.max(...traces.map((t) => t.tokens.at(-1) ?? started));
  const seconds = (end - started) / 1000;
  const ttft = traces.map((t) => (t.tokens[0] ?? NaN) - t.arrival);
  const itl = traces.flatMap((t) => t.tokens.slice(1).map((at, i) => at - (t.tokens[i] as number)));
  const summary = {
    mode,
    requests: traces.length,
    tokens,
    seconds: round(seconds),
    tokensPerSecond: round(tokens / seconds),
    ttftMs: { p50: round(percentile(ttft, 50)), p95: round(percentile(ttft, 95)) },
    itlMs: { p50: round(percentile(itl, 50)), p95: round(percentile(itl, 95)) },
  };
  console.log(JSON.stringify(summary));
  return summary;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

// Warm the main-thread session once so no mode pays the first run's allocations.
await pipeline.generate('warm up', { maxNewTokens: 2 });
console.log(
  JSON.stringify({
    requests: REQUESTS,
    promptTokens: LENGTHS,
    newTokens: NEW_TOKENS,
    arrivalMs: ARRIVAL_MS,
    intraOpThreads: THREADS,
    engineThreads: ENGINE_THREADS,
    sequentialSample: SEQUENTIAL,
  }),
);
/** Greedy token ids of the first prompts on the CPU path against this run's device. */
async function greedyMatches(count: number): Promise<{ identical: number; compared: number }> {
  const cpuStore = new ModelStore();
  const cpu = new TextGenerationPipeline(
    await cpuStore.load({ path: MODEL, runtime: { intraOpThreads: availableParallelism() } }),
  );
  const greedy = { maxNewTokens: NEW_TOKENS, minNewTokens: NEW_TOKENS, doSample: false };
  const ids = async (p: TextGenerationPipeline, prompt: string): Promise<number[]> => {
    const out: number[] = [];
    for await (const event of p.stream(prompt, greedy))
      if (event.type === 'token') out.push(event.tokenId);
    return out;
  };
  let identical = 0;
  const compared = Math.min(count, prompts.length);
  for (const prompt of prompts.slice(0, compared)) {
    const [a, b] = [await ids(cpu, prompt), await ids(pipeline, prompt)];
    if (a.length === b.length && a.every((id, i) => id === b[i])) identical += 1;
  }
  await cpuStore.close();
  return { identical, compared };
}

const eng = await engine();
const stat = await staticBatches();
const seq = await sequential();
const onCpu = GPU_PROVIDERS ? await engine('cpu', availableParallelism(), 1) : undefined;
const greedy = GPU_PROVIDERS ? await greedyMatches(env('BENCH_GREEDY_PROMPTS', 8)) : undefined;
await store.close();
console.log(
  JSON.stringify({
    bench: 'generate',
    device: DEVICE,
    ratios: {
      vs_sequential: round(eng.tokensPerSecond / seq.tokensPerSecond),
      vs_static: round(eng.tokensPerSecond / stat.tokensPerSecond),
      ...(onCpu ? { gpu_vs_cpu: round(eng.tokensPerSecond / onCpu.tokensPerSecond) } : {}),
    },
    ...(onCpu ? { cpu_engine_tokens_per_s: onCpu.tokensPerSecond } : {}),
    ...(greedy ? { greedy_identical_to_cpu: `${greedy.identical}/${greedy.compared}` } : {}),
    tokens_per_s: {
      engine: eng.tokensPerSecond,
      static: stat.tokensPerSecond,
      sequential: seq.tokensPerSecond,
    },
    ttft_p95_ms: { engine: eng.ttftMs.p95, static: stat.ttftMs.p95, sequential: seq.ttftMs.p95 },
    itl_p95_ms: { engine: eng.itlMs.p95, static: stat.itlMs.p95, sequential: seq.itlMs.p95 },
  }),
);
