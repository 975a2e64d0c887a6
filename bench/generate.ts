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
// the same machine (gpu_vs_cpu), the engine with its decode cache copied to the host and back
// every step (runtime.kvOn: host; kv_device_vs_host against the default, resident) and a check
// that greedy tokens are the CPU path's. On CPU, BENCH_KV_HOST=1 runs the kvOn=host engine too.
// Two more passes (docs/generative.md#benchmark-npm-run-benchgenerate):
//   shared:     BENCH_SHARED_REQUESTS (64) prompts that share one BENCH_SHARED_PREFIX_TOKENS-token
//               (300) instruction, each then a record of 16-160 tokens: the engine with its prefix
//               cache against the engine without it (prefix_cache_gain) and against sequential;
//   structured: BENCH_STRUCTURED_REQUESTS (200) labelling prompts with a JSON schema: tokens/s
//               against the same requests unconstrained, each forced to the same token count
//               (structured_overhead), and the fraction of outputs that parse and pass ajv.
// `-- --model smollm2|llama-100m|<folder>` picks the model (default BENCH_MODEL, else llama-100m);
// `-- --passes mixed,shared,structured` runs only some of the passes (default all three).
// `-- --passes versus` (issue 38) runs the mixed e-mails RUNS times (`-- --runs`, default 3) with
// every contender side by side: the engine on model.onnx, model_q4.onnx (int4 MatMulNBits),
// model_int8.onnx and model_appending.onnx (float32, the step's keys and values out), static and
// sequential on BENCH_BASELINES (fp32,q4,appending), and node-llama-cpp on the
// folder's GGUF (threads searched, or BENCH_LLAMA_THREADS); medians, start-up times and the
// quantized exports' greedy agreement with float32 in the final line.
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { basename, join } from 'node:path';
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
import { goldenCases, greedyAgreement, type Agreement } from './lib/greedy-agreement.ts';
import {
  ggufIn,
  startLlamaCpp,
  type LlamaCppContender,
  type LlamaCppSettings,
} from './lib/llama-cpp-contender.ts';
import { writeResultLine } from './lib/run-record.ts';

const env = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const { values: args } = parseArgs({
  options: {
    device: { type: 'string' },
    model: { type: 'string' },
    passes: { type: 'string' },
    runs: { type: 'string' },
  },
});
const MODEL = modelFolder(args.model ?? process.env['BENCH_MODEL'] ?? 'llama-100m');
const PASSES = new Set((args.passes ?? 'mixed,shared,structured').split(','));
for (const pass of PASSES)
  if (!['mixed', 'shared', 'structured', 'versus'].includes(pass))
    throw new Error(`--passes takes mixed, shared, structured and versus, not '${pass}'`);
const RUNS = Number(args.runs ?? process.env['BENCH_RUNS'] ?? 3);
if (!Number.isInteger(RUNS) || RUNS < 1)
  throw new Error(`--runs takes a count, not '${args.runs}'`);
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
  tokensPerCpuSecond: number;
  ttftMs: { p50: number; p95: number };
  itlMs: { p50: number; p95: number };
}

const store = new ModelStore();
const runtime = {
  intraOpThreads: THREADS,
  ...(GPU_PROVIDERS ? { executionProviders: GPU_PROVIDERS } : {}),
};
const loadStarted = performance.now();
const pipeline = new TextGenerationPipeline(await store.load({ path: MODEL, runtime }));
const pipelineLoadMs = performance.now() - loadStarted;
/** The single-request pipeline on another export of the same model folder (a quantized one). */
async function pipelineOf(onnxFile: string): Promise<TextGenerationPipeline> {
  return onnxFile === 'model.onnx'
    ? pipeline
    : new TextGenerationPipeline(await store.load({ path: MODEL, onnxFile, runtime }));
}
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
  single: TextGenerationPipeline = pipeline,
): Promise<Summary> {
  const every = Math.max(1, Math.round(list.length / Math.min(list.length, SEQUENTIAL)));
  const picked = list.filter((_, i) => i % every === 0);
  const traces: Trace[] = [];
  const started = performance.now();
  const cpu = process.cpuUsage();
  for (const prompt of picked) {
    const trace: Trace = { arrival: performance.now(), tokens: [] };
    for await (const event of single.stream(prompt, options))
      if (event.type === 'token') trace.tokens.push(performance.now());
    traces.push(trace);
  }
  return summarize(mode, traces, started, cpu);
}

async function staticBatches(
  single: TextGenerationPipeline = pipeline,
  label = '',
): Promise<Summary> {
  const { session } = single.model;
  const { layout } = single;
  const settings = await single.settings(OPTIONS);
  const decode = (ids: readonly number[]): Promise<string> => single.decode(ids);
  const started = performance.now();
  const cpu = process.cpuUsage();
  const traces: Trace[] = prompts.map((_, i) => ({
    arrival: started + (arrivals[i] ?? 0),
    tokens: [],
  }));
  for (let first = 0; first < prompts.length; first += STATIC_BATCH) {
    const members = prompts.slice(first, first + STATIC_BATCH);
    const lastArrival = traces[first + members.length - 1]?.arrival ?? 0;
    await sleep(Math.max(0, lastArrival - performance.now()));
    const rows = await Promise.all(
      members.map((p) => single.promptIds({ kind: 'text', text: p }, undefined)),
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
  return summarize(`static(batch ${STATIC_BATCH}${label})`, traces, started, cpu);
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
  /** Another export of the model folder than model.onnx (a quantized one). */
  onnxFile?: string;
  /** Where the decode cache lives between steps (runtime.kvOn); by default the engine's choice. */
  kvOn?: 'device' | 'host';
}

interface EngineRun extends Summary {
  results: GenerationResult[];
  prefixCache: PrefixCacheStats;
  /** GenerativeEngine.start: every thread's model loaded. */
  startMs: number;
  /** The CPU time of that start, every thread's: what it would take on a machine of its own. */
  startCpuMs: number;
  /** The warm-up requests after start, one per thread. */
  warmUpMs: number;
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
  const startStarted = performance.now();
  const startCpu = process.cpuUsage();
  const generative = await GenerativeEngine.start({
    model: {
      path: MODEL,
      ...(work.onnxFile === undefined ? {} : { onnxFile: work.onnxFile }),
      ...(work.kvOn === undefined ? {} : { runtime: { kvOn: work.kvOn } }),
    },
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
  const startMs = performance.now() - startStarted;
  const startUsed = process.cpuUsage(startCpu);
  const startCpuMs = (startUsed.user + startUsed.system) / 1000;
  // Warm the thread's session (first-run allocations) before the clock starts, as the others are.
  const warmStarted = performance.now();
  await Promise.all(
    Array.from(
      { length: engineThreads },
      () =>
        generative.submit('warm up', { generation: { ...work.warmUp, maxNewTokens: 2 } }).result,
    ),
  );
  const warmUpMs = performance.now() - warmStarted;
  const started = performance.now();
  const cpu = process.cpuUsage();
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
    cpu,
  );
  return { ...summary, results, prefixCache, startMs, startCpuMs, warmUpMs };
}

/** `cpu`: the process's CPU time when the mode started (every thread of it: engine, llama.cpp). */
function summarize(mode: string, traces: Trace[], started: number, cpu: NodeJS.CpuUsage): Summary {
  const used = process.cpuUsage(cpu);
  const cpuSeconds = (used.user + used.system) / 1e6;
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
    // What a mode costs in CPU, which load from other processes barely changes (unlike its
    // tokens/s); spinning threads count too.
    tokensPerCpuSecond: round(tokens / cpuSeconds),
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
    runs: RUNS,
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

/**
 * One mode of a GPU pass: a mode that throws is reported on stderr and left out of the line, so
 * that one failure does not cost a device call's other figures. On CPU a failure ends the run.
 */
async function attempt<T>(label: string, run: () => Promise<T>): Promise<T | undefined> {
  if (!GPU_PROVIDERS) return run();
  try {
    return await run();
  } catch (err) {
    process.stderr.write(
      `${label} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    return undefined;
  }
}

const ratioOf = (a: Summary | undefined, b: Summary | undefined): number | undefined =>
  a === undefined || b === undefined ? undefined : a.tokensPerSecond / b.tokensPerSecond;

/** The mixed e-mails: engine, static batches, sequential (and on a GPU, the CPU engine). */
async function mixedPass(): Promise<Record<string, unknown>> {
  const eng = await attempt('engine', () => engine());
  const stat = await attempt('static', () => staticBatches());
  const seq = await attempt('sequential', () => sequential());
  const onCpu = GPU_PROVIDERS
    ? await attempt('cpu engine', () => engine(MIXED, 'cpu', availableParallelism(), 1))
    : undefined;
  const greedy = GPU_PROVIDERS
    ? await attempt('greedy', () => greedyMatches(env('BENCH_GREEDY_PROMPTS', 8)))
    : undefined;
  // The engine's decode cache resident between steps (its default with the native binding)
  // against copied to JS and back every step (kvOn=host): on a GPU always, on CPU with
  // BENCH_KV_HOST=1.
  const kvRun =
    GPU_PROVIDERS || process.env['BENCH_KV_HOST'] === '1'
      ? await attempt('engine kvOn=host', () =>
          engine({ ...MIXED, kvOn: 'host', label: 'kvOn=host' }),
        )
      : undefined;
  const ratio = (
    name: string,
    value: number | undefined,
    digits: (v: number) => number = round,
  ): Record<string, number> => (value === undefined ? {} : { [name]: digits(value) });
  return {
    ratios: {
      ...ratio('vs_sequential', ratioOf(eng, seq)),
      ...ratio('vs_static', ratioOf(eng, stat)),
      ...ratio('gpu_vs_cpu', ratioOf(eng, onCpu)),
      ...ratio('kv_device_vs_host', ratioOf(eng, kvRun), round2),
    },
    ...(kvRun
      ? {
          kv_other: {
            kvOn: 'host',
            tokens_per_s: kvRun.tokensPerSecond,
            itl_p50_ms: kvRun.itlMs.p50,
          },
        }
      : {}),
    itl_p50_ms: { engine: eng?.itlMs.p50, sequential: seq?.itlMs.p50 },
    ...(onCpu ? { cpu_engine_tokens_per_s: onCpu.tokensPerSecond } : {}),
    ...(greedy ? { greedy_identical_to_cpu: `${greedy.identical}/${greedy.compared}` } : {}),
    tokens_per_s: {
      engine: eng?.tokensPerSecond,
      static: stat?.tokensPerSecond,
      sequential: seq?.tokensPerSecond,
    },
    ttft_p95_ms: { engine: eng?.ttftMs.p95, static: stat?.ttftMs.p95, sequential: seq?.ttftMs.p95 },
    itl_p95_ms: { engine: eng?.itlMs.p95, static: stat?.itlMs.p95, sequential: seq?.itlMs.p95 },
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

/** The exports the versus pass compares, by the names of the fixture scripts' files. */
const VARIANTS: Record<string, string> = {
  fp32: 'model.onnx',
  q4: 'model_q4.onnx',
  int8: 'model_int8.onnx',
  // float32 too: the step's keys and values out, appended to the engine's own buffers.
  appending: 'model_appending.onnx',
};
/** Exports whose static and sequential baselines the versus pass runs too (each ~40 s a run). */
const BASELINES = (process.env['BENCH_BASELINES'] ?? 'fp32,q4,appending').split(',');

/**
 * The mixed e-mails at REQUESTS concurrent requests, RUNS times with every contender side by
 * side in each run (the order the same every run), medians reported: the engine on each export
 * (float32, int4 MatMulNBits, int8), static batches and sequential on the BASELINES exports, and
 * node-llama-cpp on the model folder's GGUF at its best thread count (searched first, untimed).
 * Ratios are medians of each run's ratio, so load that drifts between runs cancels.
 */
async function versusPass(): Promise<Record<string, unknown>> {
  const variants = Object.entries(VARIANTS).filter(([, file]) => existsSync(join(MODEL, file)));
  const missing = Object.keys(VARIANTS).filter((v) => !variants.some(([name]) => name === v));
  const singles = new Map<string, TextGenerationPipeline>();
  for (const [name, file] of variants) singles.set(name, await pipelineOf(file));
  for (const single of singles.values()) await single.generate('warm up', { maxNewTokens: 2 });
  const baselines = BASELINES.filter((name) => singles.has(name));

  const agreement: Record<string, unknown> = {};
  const { cases, maxNewTokens } = goldenCases(MODEL);
  for (const [name, single] of singles)
    if (name !== 'fp32' && cases.length > 0)
      agreement[name] = roundAll(await greedyAgreement(single, cases, maxNewTokens));

  const gguf = ggufIn(MODEL);
  const promptIds = await Promise.all(
    prompts.map((text) => pipeline.promptIds({ kind: 'text', text }, undefined)),
  );
  const llamaSettings = (threads: number): LlamaCppSettings => ({
    ggufPath: gguf as string,
    sequences: REQUESTS,
    tokensPerSequence: Math.max(...promptIds.map((ids) => ids.length)) + NEW_TOKENS + 16,
    threads,
  });
  const llamaRun = async (contender: LlamaCppContender): Promise<Summary> => {
    const cpu = process.cpuUsage();
    const { traces, started } = await contender.run(promptIds, arrivals, NEW_TOKENS);
    const threads = contender.settings.threads;
    return summarize(
      `node-llama-cpp(${threads} thread${threads > 1 ? 's' : ''})`,
      traces,
      started,
      cpu,
    );
  };
  // llama.cpp's best thread count on this machine, one untimed run each.
  let llama: LlamaCppContender | undefined;
  const searched: Record<string, number> = {};
  if (gguf !== undefined) {
    const candidates = process.env['BENCH_LLAMA_THREADS']
      ? [env('BENCH_LLAMA_THREADS', 1)]
      : Array.from({ length: availableParallelism() }, (_, i) => i + 1);
    let best = -1;
    for (const threads of candidates) {
      const contender = await startLlamaCpp(llamaSettings(threads));
      const rate = candidates.length === 1 ? Infinity : (await llamaRun(contender)).tokensPerSecond;
      if (Number.isFinite(rate)) searched[String(threads)] = rate;
      if (rate > best) {
        await llama?.close();
        [llama, best] = [contender, rate];
      } else await contender.close();
    }
  }

  const runs: Record<string, Summary[]> = {};
  const startup: Record<string, { startMs: number[]; startCpuMs: number[]; warmUpMs: number[] }> =
    {};
  const record = (mode: string, summary: Summary): void => {
    (runs[mode] ??= []).push(summary);
  };
  for (let run = 0; run < RUNS; run += 1) {
    for (const [name, file] of variants) {
      const eng = await engine({ ...MIXED, onnxFile: file, label: name });
      record(`engine_${name}`, eng);
      const times = (startup[`engine_${name}`] ??= { startMs: [], startCpuMs: [], warmUpMs: [] });
      times.startMs.push(eng.startMs);
      times.startCpuMs.push(eng.startCpuMs);
      times.warmUpMs.push(eng.warmUpMs);
    }
    if (llama !== undefined) record('llama_cpp', await llamaRun(llama));
    for (const name of baselines) {
      const single = singles.get(name) as TextGenerationPipeline;
      record(`static_${name}`, await staticBatches(single, `, ${name}`));
      record(
        `sequential_${name}`,
        await sequential(prompts, OPTIONS, `sequential(${name})`, single),
      );
    }
  }
  await llama?.close();

  const median = (values: readonly number[]): number => round(percentile([...values], 50));
  const perRun = (a: string, b: string, pick: (s: Summary) => number): number | undefined => {
    const [x, y] = [runs[a], runs[b]];
    if (x === undefined || y === undefined) return undefined;
    return round2(
      percentile(
        x.map((s, i) => pick(s) / (y[i] ? pick(y[i]) : NaN)),
        50,
      ),
    );
  };
  const ratios: Record<string, number> = {};
  // The same ratios of tokens per CPU-second: what each mode costs, which a loaded machine
  // changes far less than the wall-clock ratios (they compare modes run at different moments).
  const cpuRatios: Record<string, number> = {};
  const ratio = (key: string, a: string, b: string): void => {
    const value = perRun(a, b, (x) => x.tokensPerSecond);
    if (value !== undefined) ratios[key] = value;
    const cpu = perRun(a, b, (x) => x.tokensPerCpuSecond);
    if (cpu !== undefined) cpuRatios[key] = cpu;
  };
  ratio('vs_sequential', 'engine_fp32', 'sequential_fp32');
  ratio('vs_static', 'engine_fp32', 'static_fp32');
  for (const [name] of variants) {
    if (name !== 'fp32') {
      ratio(`${name}_vs_sequential`, `engine_${name}`, `sequential_${name}`);
      ratio(`${name}_vs_static`, `engine_${name}`, `static_${name}`);
      ratio(`${name}_vs_fp32`, `engine_${name}`, 'engine_fp32');
    }
    ratio(`${name}_vs_llama_cpp`, `engine_${name}`, 'llama_cpp');
  }
  const byMode = (pick: (s: Summary) => number): Record<string, number> =>
    Object.fromEntries(Object.entries(runs).map(([mode, list]) => [mode, median(list.map(pick))]));
  return {
    ratios,
    ratios_per_cpu_s: cpuRatios,
    runs: RUNS,
    // Figures from a machine others share are indications; BENCH_QUIET_MACHINE=1 vouches it is not.
    loaded_machine: process.env['BENCH_QUIET_MACHINE'] !== '1',
    load_average_1m: round(loadavg()[0] ?? NaN),
    variants: Object.fromEntries(variants),
    ...(missing.length > 0 ? { variants_missing: missing } : {}),
    tokens_per_s: byMode((s) => s.tokensPerSecond),
    tokens_per_cpu_s: byMode((s) => s.tokensPerCpuSecond),
    ttft_p95_ms: byMode((s) => s.ttftMs.p95),
    itl_p95_ms: byMode((s) => s.itlMs.p95),
    startup_ms: {
      main_thread_fp32_load: round(pipelineLoadMs),
      ...Object.fromEntries(
        Object.entries(startup).map(([mode, t]) => [
          mode,
          {
            start: median(t.startMs),
            start_cpu: median(t.startCpuMs),
            warm_up: median(t.warmUpMs),
          },
        ]),
      ),
      ...(llama === undefined
        ? {}
        : { llama_cpp: { load: round(llama.loadMs), warm_up: round(llama.warmUpMs) } }),
    },
    llama_cpp:
      gguf === undefined
        ? `left out: no .gguf in ${MODEL}`
        : {
            gguf: basename(gguf),
            sequences: REQUESTS,
            threads: llama?.settings.threads,
            threads_searched: searched,
          },
    greedy_agreement: cases.length > 0 ? agreement : 'no goldens.json in the model folder',
  };
}

function roundAll(agreement: Agreement): Record<string, number> {
  return Object.fromEntries(
    Object.entries(agreement).map(([k, v]: [string, number]) => [
      k,
      Number.isInteger(v) ? v : round2(v),
    ]),
  );
}

const passes: Record<string, unknown>[] = [];
if (PASSES.has('mixed')) passes.push(await mixedPass());
if (PASSES.has('shared')) passes.push(await sharedPass());
if (PASSES.has('structured')) passes.push(await structuredPass());
if (PASSES.has('versus')) passes.push(await versusPass());
await store.close();
const line: Record<string, unknown> = { bench: 'generate', device: DEVICE, model: MODEL };
for (const pass of passes)
  for (const [key, value] of Object.entries(pass))
    line[key] =
      key === 'ratios'
        ? { ...(line['ratios'] as object | undefined), ...(value as object) }
        : value;
writeResultLine(line);
