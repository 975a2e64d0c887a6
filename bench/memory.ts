// npm run bench:memory — peak resident memory of a CPU shard per session layout, each layout in a
// child process of its own so that one layout's pages never count in another's peak. Layouts:
// ours at the default (one single-threaded worker per core, arena and prepacking on), ours with
// the memory arena off, ours with prepacking off, ours sending each batch to a thread in a message
// of its own (`batch_a_message`, no batching.maxMessageTokens), ours as one worker with every core as intra-op
// threads, ours as one worker keeping a run per core going on libuv's pool (runsPerThread, the
// `_async` layouts; raw_shared has one too), ours on a copy of the model whose weights sit in an external data file (ONNX Runtime
// maps it instead of copying it; staged once under .cache/bench/memory), ours on onnxruntime-node's
// binding (a session per thread: what a shard was before the native binding), and two raw
// contenders on pre-tokenized ids with the same thread splits: `raw`, a bare onnxruntime-node
// session per thread, and `raw_shared`, one C-API session shared by the threads (the Go and C++
// servers' layout), and `raw_shared_tokenizing`, raw_shared whose threads encode each batch's
// texts before its run (the Go server as the issue measured it: Hugot tokenizes in the goroutine;
// the same batches, so the difference is the encode). `mem_pattern_quantized` is ours at the CPU's
// memPattern default before 2026-12-07; `raw_shared_one_thread` (pattern on and off) runs the
// shared session from one thread, so nothing shares its arena. Records/s and CPU seconds per
// record (user + sys over the timed rounds) come along: a smaller layout must not be a slower or
// costlier one. Every pass runs every layout, passes alternate the order, and each figure is the
// median of the passes (every pass's figures are in the report's `passes`).
// A child loads only its own contender's modules (the engine's for ours), so that a raw child's
// peak is ONNX Runtime's, the tokenizer's and Node's alone. Children run with Node's compile
// cache (.cache/bench/compile-cache, filled by one unmeasured child per contender before the
// passes), as a worker started by bin/hugot-stream.js does: no isolate of any contender then loads
// Node's TypeScript stripper (src/shards/compile-cache.ts). The `_stripping` layouts turn it off,
// which is how every layout ran before 2026-12-03. Children also start with a worker process's
// settings (bin/worker-process.js: two glibc arenas, a 1 MiB semi-space for the main isolate), as
// bin/hugot-stream.js starts a worker; the `_glibc_arenas`, `_young_generation` and
// `_node_process` layouts go without one or both (every line before 2026-12-05 ran without).
// Options: --models DIR,... (fp32 and int8 MiniLM, the DistilBERT classifier), --texts N (128),
// --rounds N (2 timed rounds per child, after one warm round), --passes N (2), --layouts A,B
// (a subset, by name), --max-length N (every contender truncates there: the Go comparison
// cut every model at 256 tokens; default each task's own, 256 for MiniLM, 512 for DistilBERT).
// Internal: --child JSON runs one layout.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { BatcherOptions } from '../src/batching/batcher-options.ts';
import type { RuntimeOptions } from '../src/runtime/runtime-options.ts';
import { isBatchInvariant } from '../src/pipelines/runtime/batch-invariance.ts';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import { CLASSIFICATION, EMBEDDING, truncatedAt, truncationFlag } from './lib/contenders.ts';
import { loadTexts } from './lib/corpus.ts';
import { RawPool, cutBatches, type BatchPolicy, type RawSessions } from './lib/raw-pool.ts';
import { WORKER_ENV, WORKER_V8_FLAGS } from '../bin/worker-process.js';
import { round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';

interface Layout {
  name: string;
  contender: 'ours' | 'raw';
  /** The raw contender's sessions: one per thread (default) or one shared. */
  sessions?: RawSessions;
  workers: number;
  intraOpThreads: number;
  runtime?: RuntimeOptions;
  /** Run on the external-data copy of the model folder. */
  externalData?: boolean;
  /**
   * The raw contender's memory pattern: on unless false, ONNX Runtime's own default, which a
   * server on the C API gets (ours: off on CPU but for quantized encoders, `runtime.memPattern`;
   * the `mem_pattern` and `mem_pattern_off` layouts set it either way).
   */
  memPattern?: boolean;
  /** Runs each thread keeps going at once on libuv's pool (shared native sessions; default 1). */
  runsPerThread?: number;
  /** Raw: the threads get texts and encode them inside the timed rounds (raw-worker.ts). */
  tokenizes?: boolean;
  /** Ours: the pipeline's batching, where it is not the default. */
  batching?: BatcherOptions;
  /** false: the child strips its TypeScript as it loads it (NODE_DISABLE_COMPILE_CACHE). */
  compileCache?: boolean;
  /**
   * Which of a worker process's start-up settings (bin/worker-process.js, which
   * bin/hugot-stream.js starts itself with) the child goes without: 'arenas', glibc's arena cap
   * (then 8 per core); 'youngGeneration', the main isolate's semi-space cap (then V8's 16 MiB).
   */
  without?: readonly ('arenas' | 'youngGeneration')[];
}

interface ChildJob {
  layout: Layout;
  model: string;
  /** A JSON file of the texts: the child must not parse the whole corpus (~100 MB of heap). */
  textsFile: string;
  rounds: number;
  /** Truncation for every contender, where --max-length set one. */
  maxLength?: number;
}

interface ChildResult {
  /** Resident memory once every session is loaded, before the first record. */
  loadedMiB: number;
  /** The high-water mark once every session is loaded: what the load itself peaked at. */
  loadPeakMiB: number;
  peakMiB: number;
  /**
   * Proportional set size after the timed rounds (the arena never shrinks, so this is near the
   * peak): a file page that two sessions map counts once here, twice in VmRSS and VmHWM.
   */
  endPssMiB: number;
  recordsPerSecond: number;
  /** User + system CPU seconds of the whole process per record, over the timed rounds. */
  cpuSecondsPerRecord: number;
  /** Milliseconds from the child's first engine (or raw pool) import to every session loaded. */
  loadMs: number;
}

const { values } = parseArgs({
  options: {
    models: {
      type: 'string',
      default: `.cache/models/all-MiniLM-L6-v2,models/all-MiniLM-L6-v2-int8,${CLASSIFICATION.modelFolder}`,
    },
    layouts: { type: 'string' },
    texts: { type: 'string', default: '128' },
    rounds: { type: 'string', default: '2' },
    passes: { type: 'string', default: '2' },
    'max-length': { type: 'string' },
    child: { type: 'string' },
  },
});
const cachedEnv = {
  ...withoutCacheSwitch(process.env),
  NODE_COMPILE_CACHE: resolve('.cache', 'bench', 'compile-cache'),
};
const strippingEnv = { ...process.env, NODE_DISABLE_COMPILE_CACHE: '1' };

if (values.child !== undefined) {
  const result = await runChild(JSON.parse(values.child) as ChildJob);
  process.stdout.write(`${JSON.stringify(result)}\n`);
  // Worker threads and native pools are closed, but exit at once rather than wait on stragglers.
  process.exit(0);
}

const cores = availableParallelism();
const allLayouts: Layout[] = [
  { name: 'default', contender: 'ours', workers: cores, intraOpThreads: 1 },
  {
    name: 'onnxruntime_node',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { binding: 'onnxruntime-node' },
  },
  {
    name: 'mem_pattern',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { memPattern: true },
  },
  {
    // The CPU default before 2026-12-06: priced by characters, every encode on the threads.
    name: 'priced_by_characters',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    batching: { pricing: 'characters' },
  },
  {
    // Each batch a message of its own to a thread: the CPU default before 2026-12-06's
    // maxMessageTokens (several due batches a message).
    name: 'batch_a_message',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    batching: { maxMessageTokens: 0 },
  },
  {
    // The CPU default before 2026-12-07: memory patterns for quantized graphs only.
    name: 'mem_pattern_quantized',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { memPattern: 'quantized' },
  },
  {
    name: 'mem_pattern_off',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { memPattern: false },
  },
  {
    name: 'arena_off',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { cpuMemArena: false },
  },
  {
    name: 'prepacking_off',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { prepacking: false },
  },
  {
    name: 'arena_and_prepacking_off',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { cpuMemArena: false, prepacking: false },
  },
  { name: `one_worker_x${cores}`, contender: 'ours', workers: 1, intraOpThreads: cores },
  {
    name: `one_worker_async_x${cores}`,
    contender: 'ours',
    workers: 1,
    intraOpThreads: 1,
    runsPerThread: cores,
  },
  {
    name: 'trim_runs',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    runtime: { trimHeap: 'runs' },
  },
  {
    name: 'external_data',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    externalData: true,
  },
  {
    name: 'default_glibc_arenas',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    without: ['arenas'],
  },
  {
    name: 'default_young_generation',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    without: ['youngGeneration'],
  },
  {
    name: 'default_node_process',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    without: ['arenas', 'youngGeneration'],
  },
  {
    name: 'raw_shared_node_process',
    contender: 'raw',
    sessions: 'shared',
    workers: cores,
    intraOpThreads: 1,
    without: ['arenas', 'youngGeneration'],
  },
  {
    name: 'default_stripping',
    contender: 'ours',
    workers: cores,
    intraOpThreads: 1,
    compileCache: false,
  },
  { name: 'raw', contender: 'raw', workers: cores, intraOpThreads: 1 },
  { name: `raw_one_worker_x${cores}`, contender: 'raw', workers: 1, intraOpThreads: cores },
  { name: 'raw_shared', contender: 'raw', sessions: 'shared', workers: cores, intraOpThreads: 1 },
  {
    name: 'raw_shared_tokenizing',
    contender: 'raw',
    sessions: 'shared',
    workers: cores,
    intraOpThreads: 1,
    tokenizes: true,
  },
  {
    name: 'raw_shared_mem_pattern_off',
    contender: 'raw',
    sessions: 'shared',
    workers: cores,
    intraOpThreads: 1,
    memPattern: false,
  },
  {
    // One thread on the session: nothing shares its arena (the memory pattern's cost, off, is
    // the two threads' allocations from one arena, docs/performance.md).
    name: 'raw_shared_one_thread',
    contender: 'raw',
    sessions: 'shared',
    workers: 1,
    intraOpThreads: 1,
  },
  {
    name: 'raw_shared_one_thread_mem_pattern_off',
    contender: 'raw',
    sessions: 'shared',
    workers: 1,
    intraOpThreads: 1,
    memPattern: false,
  },
  {
    name: `raw_shared_one_worker_async_x${cores}`,
    contender: 'raw',
    sessions: 'shared',
    workers: 1,
    intraOpThreads: 1,
    runsPerThread: cores,
  },
  {
    name: 'raw_shared_stripping',
    contender: 'raw',
    sessions: 'shared',
    workers: cores,
    intraOpThreads: 1,
    compileCache: false,
  },
  {
    name: `raw_shared_one_worker_x${cores}`,
    contender: 'raw',
    sessions: 'shared',
    workers: 1,
    intraOpThreads: cores,
  },
];
const chosen = values.layouts?.split(',');
const layouts =
  chosen === undefined ? allLayouts : allLayouts.filter((l) => chosen.includes(l.name));
if (chosen !== undefined && layouts.length !== chosen.length)
  throw new Error(`--layouts: known layouts are ${allLayouts.map((l) => l.name).join(', ')}`);

const models = values.models.split(',');
const maxLength = truncationFlag('max-length', values['max-length']);
const textsFile = join('.cache', 'bench', 'memory', `texts-${values.texts}.json`);
mkdirSync(join('.cache', 'bench', 'memory'), { recursive: true });
writeFileSync(textsFile, JSON.stringify(loadTexts(Number(values.texts))));
const staged = new Map<string, string>();
for (const model of models) staged.set(model, await stageExternalData(model));
/** Every pass's figure per model and layout; the report takes the median of the passes. */
type Runs = Record<string, Record<string, number[]>>;
// One child per kind of contender fills the cache with the modules its kind loads.
const primed = new Set<string>();
for (const layout of layouts) {
  const kind = `${layout.contender}:${layout.runtime?.binding ?? 'native'}`;
  if (layout.compileCache === false || primed.has(kind)) continue;
  primed.add(kind);
  runInChild({ layout, model: models[0] ?? '', textsFile, rounds: 0 });
}
const runs = {
  loaded: {} as Runs,
  loadPeak: {} as Runs,
  peak: {} as Runs,
  pss: {} as Runs,
  speed: {} as Runs,
  loadMs: {} as Runs,
  cpu: {} as Runs,
};
const record = (into: Runs, label: string, layout: string, value: number): void => {
  ((into[label] ??= {})[layout] ??= []).push(value);
};
for (let pass = 0; pass < Number(values.passes); pass += 1) {
  const order = pass % 2 === 0 ? layouts : [...layouts].reverse();
  for (const model of models) {
    const label = modelLabel(model);
    for (const layout of order) {
      const job: ChildJob = {
        layout,
        model: layout.externalData === true ? (staged.get(model) ?? model) : model,
        textsFile,
        rounds: Number(values.rounds),
        ...(maxLength === undefined ? {} : { maxLength }),
      };
      const result = runInChild(job);
      record(runs.loaded, label, layout.name, result.loadedMiB);
      record(runs.peak, label, layout.name, result.peakMiB);
      record(runs.pss, label, layout.name, result.endPssMiB);
      record(runs.speed, label, layout.name, result.recordsPerSecond);
      record(runs.cpu, label, layout.name, result.cpuSecondsPerRecord);
      record(runs.loadPeak, label, layout.name, result.loadPeakMiB);
      record(runs.loadMs, label, layout.name, result.loadMs);
      process.stderr.write(
        `pass ${pass + 1} ${label} ${layout.name}: ${result.loadedMiB} MiB loaded ` +
          `(${result.loadPeakMiB} MiB peak while loading), ` +
          `${result.peakMiB} MiB peak, ${result.endPssMiB} MiB PSS at the end, ` +
          `${result.recordsPerSecond} records/s, ${result.cpuSecondsPerRecord} CPU s/record, ` +
          `loaded in ${result.loadMs} ms\n`,
      );
    }
  }
}
const medians = (of: Runs): Record<string, Record<string, number>> =>
  Object.fromEntries(
    Object.entries(of).map(([label, byLayout]) => [
      label,
      Object.fromEntries(Object.entries(byLayout).map(([name, v]) => [name, median(v)])),
    ]),
  );
const loaded = medians(runs.loaded);
const loadPeak = medians(runs.loadPeak);
const loadMs = medians(runs.loadMs);
const peak = medians(runs.peak);
const pss = medians(runs.pss);
const speed = medians(runs.speed);
const cpu = medians(runs.cpu);

const speedVsDefault: Record<string, Record<string, number>> = {};
for (const [label, speeds] of Object.entries(speed)) {
  const base = speeds['default'] ?? 1;
  speedVsDefault[label] = Object.fromEntries(
    Object.entries(speeds).map(([name, rate]) => [name, round(rate / base)]),
  );
}
/**
 * Per model, our default against each contender in the contender's best layout: of its thread
 * splits (`raw`, `raw_one_worker_xN`), the one with the most records/s; its peak RSS and CPU per
 * record are the ones compared. Ours stays at its default.
 */
const vs: Record<string, Record<string, number>> = {};
const bestLayouts: Record<string, Record<string, string>> = {};
for (const [label, peaks] of Object.entries(peak)) {
  const speeds = speed[label] ?? {};
  const cpus = cpu[label] ?? {};
  const fastest = (contender: string): string | undefined =>
    Object.keys(speeds)
      .filter((name) => name === contender || name.startsWith(`${contender}_one_worker`))
      .sort((a, b) => (speeds[b] ?? 0) - (speeds[a] ?? 0))[0];
  /** A contender with one layout only: its name, if it ran. */
  const ranAlone = (name: string): string | undefined =>
    speeds[name] === undefined ? undefined : name;
  const ratio = (a: number | undefined, b: number | undefined): number | undefined =>
    a === undefined || b === undefined ? undefined : round(a / b);
  const entries: [string, number | undefined][] = [];
  const chosen: Record<string, string> = {};
  for (const [contender, name] of [
    ['raw_shared', fastest('raw_shared')],
    ['raw', fastest('raw')],
    ['raw_shared_tokenizing', ranAlone('raw_shared_tokenizing')],
    ['onnxruntime_node', ranAlone('onnxruntime_node')],
  ] as const) {
    if (name === undefined) continue;
    chosen[contender] = name;
    entries.push(
      [`rss_vs_${contender}`, ratio(peaks['default'], peaks[name])],
      [`cpu_per_record_vs_${contender}`, ratio(cpus['default'], cpus[name])],
      [`speed_vs_${contender}`, ratio(speeds['default'], speeds[name])],
    );
  }
  vs[label] = Object.fromEntries(entries.filter((e): e is [string, number] => e[1] !== undefined));
  bestLayouts[label] = chosen;
}
// The benchmark's model (bench:throughput's embedding task) at the default thread split.
const benchModel = modelLabel(EMBEDDING.modelFolder);
const benchPeaks = peak[benchModel] ?? peak[modelLabel(models[0] ?? '')] ?? {};
writeResultLine({
  bench: 'memory',
  cores,
  texts: Number(values.texts),
  // null: each task's own truncation (256 tokens for MiniLM, 512 for DistilBERT).
  max_length: maxLength ?? null,
  rss_mib: {
    ours: benchPeaks['default'],
    raw: benchPeaks['raw'],
    raw_shared: benchPeaks['raw_shared'],
    onnxruntime_node: benchPeaks['onnxruntime_node'],
    by_layout: peak,
  },
  ratios: {
    // Left out of the line unless both ran (a missing 'raw' once read as a ratio of ours' MiB).
    ours_vs_raw_rss:
      benchPeaks['default'] === undefined || benchPeaks['raw'] === undefined
        ? undefined
        : round(benchPeaks['default'] / benchPeaks['raw']),
    by_model: vs,
    contender_layouts: bestLayouts,
    speed_vs_default: speedVsDefault,
  },
  records_per_s: speed,
  cpu_s_per_record: cpu,
  loaded_mib: loaded,
  load_peak_mib: loadPeak,
  load_ms: loadMs,
  end_pss_mib: pss,
  passes: Number(values.passes),
  peak_mib_per_pass: runs.peak,
  cpu_s_per_record_per_pass: runs.cpu,
});

function withoutCacheSwitch(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const rest = { ...env };
  delete rest.NODE_DISABLE_COMPILE_CACHE;
  return rest;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : round(((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2, 4);
}

function modelLabel(folder: string): string {
  return folder.split('/').filter(Boolean).at(-1) ?? folder;
}

/**
 * A copy of the model folder whose .onnx keeps the graph and moves every initializer of 1 KiB or
 * more to model.onnx.data, written by ONNX Runtime itself with graph optimization off (so the
 * graph is the original one); the other files are linked. Made once, reused after.
 */
async function stageExternalData(folder: string): Promise<string> {
  const target = join('.cache', 'bench', 'memory', `${modelLabel(folder)}-external-data`);
  mkdirSync(target, { recursive: true });
  // A link left by a checkout that has since moved dangles: it is made again.
  for (const name of readdirSync(folder))
    if (!name.endsWith('.onnx') && !existsSync(join(target, name))) {
      rmSync(join(target, name), { force: true });
      symlinkSync(resolve(folder, name), join(target, name));
    }
  if (existsSync(join(target, 'model.onnx.data'))) return target;
  const { InferenceSession } = await import('onnxruntime-node');
  const session = await InferenceSession.create(join(folder, 'model.onnx'), {
    graphOptimizationLevel: 'disabled',
    optimizedModelFilePath: join(target, 'model.onnx'),
    extra: {
      session: {
        optimized_model_external_initializers_file_name: 'model.onnx.data',
        optimized_model_external_initializers_min_size_in_bytes: '1024',
      },
    },
  });
  await session.release();
  return target;
}

function runInChild(job: ChildJob): ChildResult {
  const stdout = execFileSync(
    process.execPath,
    [...childV8Flags(job.layout), fileURLToPath(import.meta.url), '--child', JSON.stringify(job)],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 1 << 20,
      env: childEnv(job.layout),
    },
  );
  const last = stdout.trim().split('\n').at(-1) ?? '{}';
  return JSON.parse(last) as ChildResult;
}

/**
 * A worker process's start-up settings, as bin/hugot-stream.js gives them: every child, the raw
 * contenders' too, gets them unless its layout says `without`.
 */
function childEnv(layout: Layout): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...(layout.compileCache === false ? strippingEnv : cachedEnv) };
  for (const [name, value] of Object.entries(WORKER_ENV))
    if (layout.without?.includes('arenas') === true) delete env[name];
    else env[name] = value;
  return env;
}

function childV8Flags(layout: Layout): string[] {
  return layout.without?.includes('youngGeneration') === true ? [] : [...WORKER_V8_FLAGS];
}

/** The process's high-water mark of resident memory (VmHWM), in MiB. */
function peakResidentMiB(): number {
  const kib = statusKiB('VmHWM');
  // Outside Linux, resourceUsage's maxRSS (KiB on every platform Node documents) is the same.
  return round((kib ?? process.resourceUsage().maxRSS) / 1024, 1);
}

function residentMiB(): number {
  return round((statusKiB('VmRSS') ?? process.memoryUsage.rss() / 1024) / 1024, 1);
}

/** 0 where /proc/self/smaps_rollup is missing (outside Linux). */
function proportionalMiB(): number {
  return round((statusKiB('Pss', '/proc/self/smaps_rollup') ?? 0) / 1024, 1);
}

function statusKiB(field: string, file = '/proc/self/status'): number | undefined {
  if (!existsSync(file)) return undefined;
  const status = readFileSync(file, 'utf8');
  const kib = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1];
  return kib === undefined ? undefined : Number(kib);
}

/** The classifier's folder runs bench:throughput's classification task; the others embed. */
function specFor(model: string): typeof EMBEDDING {
  return modelLabel(model).startsWith(modelLabel(CLASSIFICATION.modelFolder))
    ? CLASSIFICATION
    : EMBEDDING;
}

/** The same batches as texts: the cut keeps each row's array, so a row finds its text. */
function asTexts(
  batches: number[][][],
  encoded: readonly { ids: number[] }[],
  texts: readonly string[],
): string[][] {
  const textOf = new Map(encoded.map((e, i) => [e.ids, texts[i] ?? '']));
  return batches.map((batch) => batch.map((row) => textOf.get(row) ?? ''));
}

/** User + system CPU seconds of the process (every thread) since `before`. */
function cpuSecondsSince(before: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6;
}

async function runChild(job: ChildJob): Promise<ChildResult> {
  const texts = JSON.parse(readFileSync(job.textsFile, 'utf8')) as string[];
  const { layout } = job;
  const taskSpec = specFor(job.model);
  const spec = job.maxLength === undefined ? taskSpec : truncatedAt(taskSpec, job.maxLength);
  let best = 0;
  let loadedMiB = 0;
  let loadPeakMiB = 0;
  let endPssMiB = 0;
  let loadMs = 0;
  let cpuSeconds = Infinity;
  if (layout.contender === 'ours') {
    // Loaded here, not at the top: a raw child must not carry the engine's modules in its peak.
    const loadStarted = performance.now();
    const { allAtOnce, startEngine } = await import('./lib/engine-runs.ts');
    const engine = await startEngine(
      job.model,
      spec.pipeline,
      layout.batching,
      [
        {
          device: 'cpu',
          threads: layout.workers,
          intraOpThreads: layout.intraOpThreads,
          ...(layout.runsPerThread === undefined ? {} : { runsPerThread: layout.runsPerThread }),
        },
      ],
      layout.runtime,
    );
    loadMs = Math.round(performance.now() - loadStarted);
    loadedMiB = residentMiB();
    loadPeakMiB = peakResidentMiB();
    try {
      await allAtOnce(engine, texts);
      for (let r = 0; r < job.rounds; r += 1) {
        const before = process.cpuUsage();
        best = Math.max(best, (await allAtOnce(engine, texts)).recordsPerSecond);
        cpuSeconds = Math.min(cpuSeconds, cpuSecondsSince(before));
      }
      endPssMiB = proportionalMiB();
    } finally {
      await engine.close();
    }
  } else {
    const loadStarted = performance.now();
    const onnxPath = join(job.model, 'model.onnx');
    const tokenizer = await TextTokenizer.load(job.model);
    const encoded = await tokenizer.encode(texts, {
      truncation: 'longest_first',
      maxLength: spec.maxLength,
    });
    // Dynamically quantized models run one row per call in our engine; the raw pool matches it.
    const policy: BatchPolicy = (await isBatchInvariant(onnxPath))
      ? { kind: 'tokens', budget: 512, maxRows: 32 }
      : { kind: 'rows', size: 1 };
    const idBatches = cutBatches(
      encoded.map((e) => e.ids),
      policy,
    );
    const batches = layout.tokenizes === true ? asTexts(idBatches, encoded, texts) : idBatches;
    const pool = await RawPool.start(onnxPath, {
      workers: layout.workers,
      intraOpThreads: layout.intraOpThreads,
      ...(layout.sessions === undefined ? {} : { sessions: layout.sessions }),
      ...(layout.runsPerThread === undefined ? {} : { runsPerThread: layout.runsPerThread }),
      ...(layout.memPattern === undefined ? {} : { memPattern: layout.memPattern }),
      ...(layout.tokenizes === true
        ? { tokenizer: { folder: job.model, maxLength: spec.maxLength } }
        : {}),
    });
    loadMs = Math.round(performance.now() - loadStarted);
    loadedMiB = residentMiB();
    loadPeakMiB = peakResidentMiB();
    try {
      await pool.run(batches);
      for (let r = 0; r < job.rounds; r += 1) {
        const before = process.cpuUsage();
        const started = performance.now();
        await pool.run(batches);
        best = Math.max(best, texts.length / ((performance.now() - started) / 1000));
        cpuSeconds = Math.min(cpuSeconds, cpuSecondsSince(before));
      }
      endPssMiB = proportionalMiB();
    } finally {
      await pool.close();
    }
  }
  return {
    loadedMiB,
    loadPeakMiB,
    peakMiB: peakResidentMiB(),
    loadMs,
    endPssMiB,
    recordsPerSecond: round(best, 1),
    cpuSecondsPerRecord: Number((cpuSeconds / texts.length).toPrecision(4)),
  };
}
