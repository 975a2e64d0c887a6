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
// Two more passes (docs/generative.md#benchmark-npm-run-benchgenerate):
//   shared:     BENCH_SHARED_REQUESTS (64) prompts that share one BENCH_SHARED_PREFIX_TOKENS-token
//               (300) instruction, each then a record of 16-160 tokens: the engine with its prefix
//               cache against the engine without it (prefix_cache_gain) and against sequential;
//   structured: BENCH_STRUCTURED_REQUESTS (200) labelling prompts with a JSON schema: tokens/s
//               against the same requests unconstrained, each forced to the same token count
//               (structured_overhead), and the fraction of outputs that parse and pass ajv.
// `-- --model smollm2|llama-100m|<folder>` picks the model (default BENCH_MODEL, else llama-100m);
// `-- --passes mixed,shared,structured` runs only some of the passes (default all three).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { GenerativeEngine } from '../src/generative/generative-engine.ts';
import type { GenerationOptions } from '../src/pipelines/generation/generation-options.ts';
import {
  GenerationProgress,
  type GenerationResult,
} from '../src/pipelines/generation/generation-progress.ts';
import {
  emptyKvState,
  leftPad,
  runStep,
  type StepTokens,
} from '../src/pipelines/generation/kv-cache.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import type {
  PrefixCacheOptions,
  PrefixCacheStats,
} from '../src/pipelines/generation/prefix-cache.ts';
import { TextGenerationPipeline } from '../src/pipelines/generation/text-generation.ts';
import {
  LABEL_INSTRUCTION,
  LABEL_SCHEMA,
  modelFolder,
  sharedPrefixPrompts,
  validLabelJson,
} from './lib/generate-workloads.ts';
import { writeResultLine } from './lib/run-record.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const { values: args } = parseArgs({
  options: {
    device: { type: 'string' },
    model: { type: 'string' },
    passes: { type: 'string' },
  },
});
const MODEL = modelFolder(args.model ?? process.env['BENCH_MODEL'] ?? 'llama-100m');
const PASSES = new Set((args.passes ?? 'mixed,shared,structured').split(','));
for (const pass of PASSES)
  if (!['mixed', 'shared', 'structured'].includes(pass))
    throw new Error(`--passes takes mixed, shared and structured, not '${pass}'`);
const CORPUS = process.env['BENCH_CORPUS'] ?? '.cache/corpus/spam-assassin.jsonl';
const REQUESTS = env('BENCH_REQUESTS', 32);
const NEW_TOKENS = env('BENCH_NEW_TOKENS', 64);
const ARRIVAL_MS = env('BENCH_ARRIVAL_MS', 2000);
const STATIC_BATCH = env('BENCH_STATIC_BATCH', 8);
const SEQUENTIAL = env('BENCH_SEQUENTIAL', Infinity);
const SHARED_REQUESTS = env('BENCH_SHARED_REQUESTS', 64);
const SHARED_PREFIX_TOKENS = env('BENCH_SHARED_PREFIX_TOKENS', 300);
const SHARED_NEW_TOKENS = env('BENCH_SHARED_NEW_TOKENS', 32);
const RECORD_LENGTHS = [16, 48, 96, 160];
const STRUCTURED_REQUESTS = env('BENCH_STRUCTURED_REQUESTS', 200);
const STRUCTURED_MAX_TOKENS = env('BENCH_STRUCTURED_MAX_TOKENS', 128);
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
const SHARED_OPTIONS = { maxNewTokens: SHARED_NEW_TOKENS, minNewTokens: SHARED_NEW_TOKENS };
const STRUCTURED_OPTIONS: GenerationOptions = {
  maxNewTokens: STRUCTURED_MAX_TOKENS,
  responseFormat: { type: 'json_schema', schema: LABEL_SCHEMA },
};

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
const loadedTokenizer = pipeline.model.tokenizer;
if (loadedTokenizer === undefined) throw new Error(`${MODEL} has no tokenizer`);
const tokenizer = loadedTokenizer;

// Real e-mail bodies cut to a cycle of token lengths, so every mode sees the same ragged mix.
const texts = readFileSync(CORPUS, 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text)
  .filter((text) => text.length > 2000);
async function emailPrompts(count: number, lengths: readonly number[]): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const text = texts[(i * 37) % texts.length] as string;
    const [encoded] = await tokenizer.encode([text], {
      truncation: false,
      addSpecialTokens: false,
    });
    out.push(
      await tokenizer.decode((encoded?.ids ?? []).slice(0, lengths[i % lengths.length]), true),
    );
  }
  return out;
}
const spread = (count: number): number[] =>
  Array.from({ length: count }, (_, i) => (i * ARRIVAL_MS) / count);
const prompts = await emailPrompts(REQUESTS, LENGTHS);
const arrivals = spread(REQUESTS);

/** Prompt tokens of the longest prompt, for the engine's maxKvTokens. */
async function longest(list: readonly string[]): Promise<number> {
  let max = 0;
  for (const text of list)
    max = Math.max(max, (await pipeline.promptIds({ kind: 'text', text }, undefined)).length);
  return max;
}

/** Every request back to back, or an evenly spaced sample of BENCH_SEQUENTIAL of them. */
async function sequential(
  list: readonly string[] = prompts,
  options: GenerationOptions = OPTIONS,
  mode = 'sequential',
): Promise<Summary> {
  const every = Math.max(1, Math.round(list.length / Math.min(list.length, SEQUENTIAL)));
  const picked = list.filter((_, i) => i % every === 0);
  const traces: Trace[] = [];
  const started = performance.now();
  for (const prompt of picked) {
    const trace: Trace = { arrival: performance.now(), tokens: [] };
    for await (const event of pipeline.stream(prompt, options))
      if (event.type === 'token') trace.tokens.push(performance.now());
    traces.push(trace);
  }
  return summarize(mode, traces, started);
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
    let tokens: StepTokens = leftPad(rows, tokenizer.padId ?? 0);
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

interface EngineWork {
  prompts: readonly string[];
  arrivals: readonly number[];
  /** Request i's generation options. */
  options: (i: number) => GenerationOptions;
  /** Prompt tokens of the longest prompt plus the most new tokens of any request. */
  kvPerRequest: number;
  prefixCache?: PrefixCacheOptions;
  /** The warm-up requests' options (a responseFormat is compiled there, not on the clock). */
  warmUp?: GenerationOptions;
  label?: string;
}

interface EngineRun extends Summary {
  results: GenerationResult[];
  prefixCache: PrefixCacheStats;
}

const MIXED: EngineWork = {
  prompts,
  arrivals,
  options: () => OPTIONS,
  kvPerRequest: 256 + NEW_TOKENS,
};

async function engine(
  work: EngineWork = MIXED,
  device = DEVICE,
  engineThreads = ENGINE_THREADS,
  intraOpThreads = Math.max(1, Math.floor(THREADS / ENGINE_THREADS)),
): Promise<EngineRun> {
  const generative = await GenerativeEngine.start({
    model: { path: MODEL },
    device,
    threads: engineThreads,
    intraOpThreads,
    ...(work.prefixCache ? { prefixCache: work.prefixCache } : {}),
    scheduler: {
      maxActive: 32,
      stepTokens: env('BENCH_STEP_TOKENS', 256),
      maxKvTokens: 32 * (work.kvPerRequest + 32),
      ...(process.env['BENCH_DECODE_RUN_COST'] === undefined
        ? {}
        : { decodeRunCostTokens: env('BENCH_DECODE_RUN_COST', 0) }),
    },
  });
  // Warm the thread's session (first-run allocations) before the clock starts, as the others are.
  await Promise.all(
    Array.from(
      { length: engineThreads },
      () =>
        generative.submit('warm up', { generation: { ...work.warmUp, maxNewTokens: 2 } }).result,
    ),
  );
  const started = performance.now();
  const results: GenerationResult[] = [];
  const traces = await Promise.all(
    work.prompts.map(async (prompt, i) => {
      await sleep(work.arrivals[i] ?? 0);
      const trace: Trace = { arrival: performance.now(), tokens: [] };
      for await (const event of generative.submit(prompt, { generation: work.options(i) })) {
        if (event.type === 'token') trace.tokens.push(event.receivedAt);
        else results[i] = event.result;
      }
      return trace;
    }),
  );
  await generative.close('drain');
  const { prefixCache } = generative.stats();
  const threads = `${engineThreads} thread${engineThreads > 1 ? 's' : ''}`;
  const summary = summarize(
    `engine(${device}, ${threads}${work.label ? `, ${work.label}` : ''})`,
    traces,
    started,
  );
  return { ...summary, results, prefixCache };
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

function round2(value: number): number {
  return Math.round(value * 100) / 100;
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
    sequentialSample: Number.isFinite(SEQUENTIAL) ? SEQUENTIAL : 'all',
    passes: [...PASSES],
    shared: {
      requests: SHARED_REQUESTS,
      prefixTokens: SHARED_PREFIX_TOKENS,
      recordTokens: RECORD_LENGTHS,
      newTokens: SHARED_NEW_TOKENS,
    },
    structured: { requests: STRUCTURED_REQUESTS, maxNewTokens: STRUCTURED_MAX_TOKENS },
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

/** The mixed e-mails: engine, static batches, sequential (and on a GPU, the CPU engine). */
async function mixedPass(): Promise<Record<string, unknown>> {
  const eng = await engine();
  const stat = await staticBatches();
  const seq = await sequential();
  const onCpu = GPU_PROVIDERS ? await engine(MIXED, 'cpu', availableParallelism(), 1) : undefined;
  const greedy = GPU_PROVIDERS ? await greedyMatches(env('BENCH_GREEDY_PROMPTS', 8)) : undefined;
  return {
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
  };
}

/** One instruction, many records: the engine with and without its prefix cache, and sequential. */
async function sharedPass(): Promise<Record<string, unknown>> {
  const shared = await sharedPrefixPrompts(
    tokenizer,
    await emailPrompts(SHARED_REQUESTS, [400]),
    SHARED_PREFIX_TOKENS,
    RECORD_LENGTHS,
  );
  const work = {
    prompts: shared,
    arrivals: spread(shared.length),
    options: () => SHARED_OPTIONS,
    kvPerRequest: (await longest(shared)) + SHARED_NEW_TOKENS,
  };
  const cached = await engine({ ...work, prefixCache: {}, label: 'prefix cache' });
  // The same cache with its hits copied into every row's past (the layout before the export's
  // shared-prefix input): what holding the prefix once per decode batch is worth.
  const copied = await engine({
    ...work,
    prefixCache: { sharedInput: false },
    label: 'prefix cache, copied into rows',
  });
  const uncached = await engine({
    ...work,
    prefixCache: { maxBytes: 0 },
    label: 'no prefix cache',
  });
  // The single-request path without a cache: serving with neither the engine nor its cache.
  const seq = await sequential(shared, SHARED_OPTIONS, 'sequential(shared prefix)');
  return {
    ratios: {
      prefix_cache_gain: round(cached.tokensPerSecond / uncached.tokensPerSecond),
      shared_prefix_vs_sequential: round(cached.tokensPerSecond / seq.tokensPerSecond),
      shared_input_gain: round(cached.tokensPerSecond / copied.tokensPerSecond),
    },
    shared_prefix: {
      requests: shared.length,
      prefix_tokens: SHARED_PREFIX_TOKENS,
      tokens_per_s: {
        engine_cached: cached.tokensPerSecond,
        engine_cached_copied: copied.tokensPerSecond,
        engine_uncached: uncached.tokensPerSecond,
        sequential: seq.tokensPerSecond,
      },
      ttft_p95_ms: {
        engine_cached: cached.ttftMs.p95,
        engine_cached_copied: copied.ttftMs.p95,
        engine_uncached: uncached.ttftMs.p95,
        sequential: seq.ttftMs.p95,
      },
      prefix_cache: {
        lookups: cached.prefixCache.lookups,
        hits: cached.prefixCache.hits,
        tokens_saved: cached.prefixCache.tokensSaved,
      },
    },
  };
}

/**
 * A JSON schema on every request against the same requests unconstrained, each of those forced
 * to the token count its constrained twin produced, so that the runs differ only in the masks.
 */
async function structuredPass(): Promise<Record<string, unknown>> {
  const labelled = (await emailPrompts(STRUCTURED_REQUESTS, LENGTHS)).map(
    (text) => LABEL_INSTRUCTION + text,
  );
  const base = {
    prompts: labelled,
    arrivals: spread(labelled.length),
    kvPerRequest: (await longest(labelled)) + STRUCTURED_MAX_TOKENS,
  };
  const constrained = await engine({
    ...base,
    options: () => STRUCTURED_OPTIONS,
    warmUp: STRUCTURED_OPTIONS,
    label: 'json schema',
  });
  const counts = constrained.results.map((r) => r.generatedTokens);
  const free = await engine({
    ...base,
    options: (i) => ({ maxNewTokens: counts[i] ?? 1, minNewTokens: counts[i] ?? 1 }),
    label: 'unconstrained, same token counts',
  });
  const valid = constrained.results.filter((r) => validLabelJson(r.text)).length;
  return {
    ratios: { structured_overhead: round2(constrained.tokensPerSecond / free.tokensPerSecond) },
    structured_valid: round2(valid / labelled.length),
    structured: {
      requests: labelled.length,
      valid,
      tokens_per_s: {
        json_schema: constrained.tokensPerSecond,
        unconstrained: free.tokensPerSecond,
      },
    },
  };
}

const passes: Record<string, unknown>[] = [];
if (PASSES.has('mixed')) passes.push(await mixedPass());
if (PASSES.has('shared')) passes.push(await sharedPass());
if (PASSES.has('structured')) passes.push(await structuredPass());
await store.close();
const line: Record<string, unknown> = { bench: 'generate', device: DEVICE, model: MODEL };
for (const pass of passes)
  for (const [key, value] of Object.entries(pass))
    line[key] =
      key === 'ratios'
        ? { ...(line['ratios'] as object | undefined), ...(value as object) }
        : value;
writeResultLine(line);
