// npm run bench:throughput — issue 5's side-by-side throughput run. Every contender embeds (then
// classifies) the same spam-assassin texts with the same ONNX file on the same cores:
//   raw             ONNX Runtime alone on pre-tokenized, length-sorted batches, in the best layout
//                   a calibration search finds (every thread split x batch size and token budget),
//                   a session per thread; in the --repeat turns and the int8 pass also raw-shared,
//                   the same layout on one native session shared by the threads (and in the int8
//                   pass ours priced by characters: what carrying encodings to the threads buys;
//                   ours at the CPU's 256-token budget: what the rows-alone budget buys; and each
//                   contender's CPU per record by thread kind)
//   ours            the in-process engine, every record submitted at once
//   transformers.js @huggingface/transformers' pipelines, in the best layout its own search finds
//                   (every thread split x batch size, per task)
//   fifo_sorted, budget_unsorted, fifo   our pool with one batching factor changed, and both
// It logs progress, writes the full report to .cache/bench/throughput.json and ends with one
// JSON line. Options: --texts N (default 2000), --cls-texts N (512), --latency N (120),
// --cls-latency N (64), --calibration N / --cls-calibration N (raw search sample rows: 256 / 48),
// --tjs-calibration N / --cls-tjs-calibration N (transformers.js search texts: 128 / 48),
// --search-seconds N (each search's trial budget, default 180; the finalists' re-runs come on top),
// --only embedding|classification|int8|fp16 (or several, comma-separated; fp16, MiniLM's
// model_fp16.onnx, runs with --device only), --models fixtures (the tiny test models: a smoke run of the
// machinery, not a measurement), --repeat N (after the first run, raw in its searched layout and
// ours are timed N - 1 more times, taking turns; the JSON line gets each run's ratio and the
// spread), --no-int8 (skip the int8 MiniLM pass: raw's search and N turns of raw and ours),
// --cls-max-length N (every contender truncates the classification texts there; default the
// model's 512: issue 30's comparison with a Go server cut every model at 256), --turn-texts N (the
// --repeat turns and the int8 pass time an evenly spaced N of the task's texts instead of all of
// them: shorter turns put each raw and ours closer in time, so more of them fit the same run and
// a drift of the machine's speed weighs less on each turn's ratio).
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { FP16_TOLERANCE } from '../src/runtime/half-float.ts';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  CLASSIFICATION,
  EMBEDDING,
  FP16_EMBEDDING,
  INT8_EMBEDDING,
  onModel,
  onnxFileOf,
  truncatedAt,
  truncationFlag,
  wholeNumberFlag,
  type TaskSpec,
} from './lib/contenders.ts';
import { loadTexts } from './lib/corpus.ts';
import { round } from './lib/stats.ts';
import { cpuMedians, repeatVsRaw, spread, vsRawOnly, type RepeatRun } from './lib/repeat-vs-raw.ts';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import { benchOnDevice, type DeviceReport } from './lib/device-bench.ts';
import { benchTask, type TaskReport } from './lib/task-bench.ts';
import { describeConfig } from './lib/raw-pool.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  allowNegative: true,
  options: {
    texts: { type: 'string', default: '2000' },
    'cls-texts': { type: 'string', default: '512' },
    latency: { type: 'string', default: '120' },
    'cls-latency': { type: 'string', default: '64' },
    calibration: { type: 'string', default: '256' },
    'cls-calibration': { type: 'string', default: '48' },
    'cls-max-length': { type: 'string' },
    'tjs-calibration': { type: 'string', default: '128' },
    'cls-tjs-calibration': { type: 'string', default: '48' },
    'search-seconds': { type: 'string', default: '180' },
    /** Runs of raw vs ours: the first is the whole comparison, the rest raw and ours in turns. */
    repeat: { type: 'string', default: '1' },
    /** Texts per --repeat turn (default: all of the task's). */
    'turn-texts': { type: 'string' },
    /** The int8 MiniLM pass (raw's search, then raw and ours `repeat` times). */
    int8: { type: 'boolean', default: true },
    models: { type: 'string' },
    /** One task alone, for a quicker look: embedding or classification. */
    only: { type: 'string' },
    /** cuda:<id>: the GPU run (bench/lib/device-bench.ts) instead of the CPU one. */
    device: { type: 'string' },
    /** GPU run: timed passes per contender, and the texts the CPU engine times. */
    passes: { type: 'string', default: '3' },
    'cpu-texts': { type: 'string', default: '2000' },
    'cuda-threads': { type: 'string', default: '8,2,4,16' },
    'token-pricing': { type: 'boolean', default: true },
    'raw-workers': { type: 'string', default: '1,2' },
    'tjs-batch-sizes': { type: 'string', default: '32,128' },
    'tjs-texts': { type: 'string', default: '6000' },
  },
});
const cores = availableParallelism();
const started = performance.now();
const log = (line: string): void => {
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
};

const embeddingCount = Number(values.texts);
const classificationCount = Number(values['cls-texts']);
// Warm-up and latency texts come from a shifted stride, so they differ from the timed ones.
const ONLY = ['embedding', 'classification', 'int8', 'fp16'];
const only = values.only?.split(',');
for (const name of only ?? [])
  if (!ONLY.includes(name))
    throw new Error(`--only takes ${ONLY.join(', ')} (comma-separated), not '${name}'`);
/** Whether --only (when given) names the task. */
const wants = (name: string): boolean => only === undefined || only.includes(name);
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1)
  throw new Error(`--repeat takes a whole number of runs, 1 or more, not '${values.repeat}'`);
const turnTexts = wholeNumberFlag('turn-texts', values['turn-texts'], 8, 'texts');
if (values.models !== undefined && values.models !== 'fixtures')
  throw new Error(`--models takes only 'fixtures', not '${values.models}'`);
const fixtures = values.models === 'fixtures';
const embeddingSpec = fixtures
  ? onModel(EMBEDDING, 'test/fixtures/models/bert-feature-extraction')
  : EMBEDDING;
const clsMaxLength = truncationFlag('cls-max-length', values['cls-max-length']);
const classificationModel = fixtures
  ? onModel(CLASSIFICATION, 'test/fixtures/models/bert-text-classification')
  : CLASSIFICATION;
const classificationSpec =
  clsMaxLength === undefined ? classificationModel : truncatedAt(classificationModel, clsMaxLength);
// The tiny fixtures have no float16 copy: the fp16 pass is skipped on them.
const fp16Spec = fixtures
  ? onModel(FP16_EMBEDDING, 'test/fixtures/models/bert-feature-extraction')
  : FP16_EMBEDDING;
const int8Spec = fixtures
  ? onModel(INT8_EMBEDDING, 'test/fixtures/models/bert-feature-extraction')
  : INT8_EMBEDDING;
if (values.device !== undefined) {
  // `--device cpu` walks the GPU run's flow on the CPU provider: a smoke run, not a measurement.
  const match = /^cuda:(\d+)$|^cpu$/.exec(values.device);
  if (match === null) throw new Error(`--device takes cuda:<id> or cpu, not '${values.device}'`);
  await runOnDevice(match[1] === undefined ? undefined : Number(match[1]));
  process.exit(0);
}

const embeddingTexts = loadTexts(embeddingCount);
const classificationTexts = loadTexts(classificationCount);
const spareTexts = loadTexts(400, 7);

/** The texts' ids as every contender runs them (truncated at the task's length). */
async function idsOf(spec: TaskSpec, texts: string[]): Promise<number[][]> {
  const tokenizer = await TextTokenizer.load(spec.modelFolder);
  const encoded = await tokenizer.encode(texts, { maxLength: spec.maxLength });
  return encoded.map((e) => e.ids);
}

/** What a --repeat turn times of a task's texts (or of their ids): all, or --turn-texts evenly spaced. */
function turnSample<T>(items: T[]): T[] {
  if (turnTexts === undefined || turnTexts >= items.length) return items;
  return Array.from(
    { length: turnTexts },
    (_, i) => items[Math.floor((i * items.length) / turnTexts)] as T,
  );
}

/** Run 1 from the whole comparison, then `repeat - 1` turns of raw and ours alone. */
async function moreRuns(
  spec: TaskSpec,
  allTexts: string[],
  report: TaskReport,
): Promise<RepeatRun[]> {
  const first: RepeatRun = { raw: report.rps.raw, ours: report.rps.ours };
  if (repeat === 1) return [first];
  const texts = turnSample(allTexts);
  const rest = await repeatVsRaw({
    spec,
    texts,
    rows: await idsOf(spec, texts),
    spare: spareTexts,
    raw: report.raw,
    runs: repeat - 1,
    firstRun: 2,
    shared: true,
    log,
  });
  return [first, ...rest];
}

const embedding = !wants('embedding')
  ? undefined
  : await benchTask(embeddingSpec, {
      texts: embeddingTexts,
      spare: spareTexts,
      latencyRecords: Number(values.latency),
      cores,
      calibration: Number(values.calibration),
      tjsCalibration: Number(values['tjs-calibration']),
      alwaysRawWithOurLayout: fixtures,
      searchSeconds: Number(values['search-seconds']),
      log,
    });
// Classification searches its own layouts: a bigger model does not share the embedding's best.
const classification = !wants('classification')
  ? undefined
  : await benchTask(classificationSpec, {
      texts: classificationTexts,
      spare: spareTexts,
      latencyRecords: Number(values['cls-latency']),
      cores,
      calibration: Number(values['cls-calibration']),
      tjsCalibration: Number(values['cls-tjs-calibration']),
      alwaysRawWithOurLayout: fixtures,
      searchSeconds: Number(values['search-seconds']),
      log,
    });

const embeddingRuns =
  embedding === undefined ? undefined : await moreRuns(embeddingSpec, embeddingTexts, embedding);
const classificationRuns =
  classification === undefined
    ? undefined
    : await moreRuns(classificationSpec, classificationTexts, classification);
// int8 MiniLM against raw alone: same texts and truncation as the fp32 embedding task.
const runsInt8 = (only === undefined && values.int8) || only?.includes('int8') === true;
const int8Rows = runsInt8 ? await idsOf(int8Spec, embeddingTexts) : [];
const int8 = runsInt8
  ? await vsRawOnly({
      spec: int8Spec,
      texts: embeddingTexts,
      spare: spareTexts,
      rows: int8Rows,
      // The same indices of texts and ids: the turns need no second tokenization.
      turns: { texts: turnSample(embeddingTexts), rows: turnSample(int8Rows) },
      cores,
      calibration: Number(values.calibration),
      searchSeconds: Number(values['search-seconds']),
      runs: repeat,
      // Dynamically quantized: our engine runs it one record per call so that a record's
      // embedding does not depend on its batch mates (batch-invariance.ts); raw's best layout
      // may batch rows. Raw one row a call says how much of the gap that choice is.
      oneRow: true,
      // The Go and C++ servers' layout: one C-API session shared by raw's threads.
      shared: true,
      // What carrying the encodings to the threads buys (docs/batching.md).
      byCharacters: true,
      // What the rows-alone budget buys: int8 MiniLM is not batch invariant (docs/batching.md).
      budget256: true,
      log,
    })
  : undefined;

/** With several runs, vs_raw is their median; `vs_raw_spread` has each run's and min/max. */
function spreadFields(runs: RepeatRun[] | undefined): Record<string, unknown> {
  return runs === undefined || runs.length < 2 ? {} : { vs_raw_spread: spread(runs) };
}

function summary(report: TaskReport, runs: RepeatRun[] | undefined): Record<string, unknown> {
  return {
    ratios: {
      vs_raw:
        runs !== undefined && runs.length > 1
          ? spread(runs).median
          : round(report.rps.ours / report.rps.raw),
      vs_transformers_js: round(report.rps.ours / report.rps.transformers_js),
      vs_fifo_sorted: round(report.rps.ours / report.rps.fifo_sorted),
      vs_budget_unsorted: round(report.rps.ours / report.rps.budget_unsorted),
      vs_fifo: round(report.rps.ours / report.rps.fifo),
    },
    ...spreadFields(runs),
    ...(runs?.some((run) => run.rawShared !== undefined) === true
      ? {
          vs_raw_shared: spread(runs, 'rawShared').median,
          vs_raw_shared_spread: spread(runs, 'rawShared'),
          // Each turn against the faster of raw and raw-shared in it: issue 30's "better raw layout".
          vs_best_raw: spread(runs, 'bestRaw').median,
        }
      : {}),
    raw: report.raw.label,
    transformers_js: report.transformersJs.label,
    ...(report.rawWithOurLayout === undefined
      ? {}
      : { raw_with_our_layout_rps: round(report.rawWithOurLayout.rps, 2) }),
    padding_efficiency: round(report.paddingEfficiency.ours),
    p99_ms: round(report.latency.p99Ms, 1),
    p99_bound_ms: round(report.latency.boundMs, 1),
    max_abs_diff: Number(report.maxAbsDiff.toPrecision(3)),
    max_abs_diff_over_length: Number(report.maxAbsDiffTruncated.toPrecision(3)),
    label_mismatches: report.labelMismatches,
  };
}

// A smoke run on the fixtures must not overwrite a real report.
const reportFile = fixtures
  ? '.cache/bench/throughput-fixtures.json'
  : '.cache/bench/throughput.json';
mkdirSync('.cache/bench', { recursive: true });
writeFileSync(
  reportFile,
  JSON.stringify(
    {
      cores,
      models: fixtures ? 'fixtures' : 'benchmark',
      seconds: (performance.now() - started) / 1000,
      embedding,
      classification,
      runs: { embedding: embeddingRuns, classification: classificationRuns, int8: int8?.runs },
      int8: int8 === undefined ? undefined : { raw: int8.raw, searchSeconds: int8.searchSeconds },
    },
    null,
    2,
  ),
);
log(`full report in ${reportFile}`);
writeResultLine({
  bench: 'throughput',
  ...(fixtures ? { models: 'fixtures (smoke run, not a measurement)' } : {}),
  ...(turnTexts === undefined ? {} : { turn_texts: turnTexts }),
  ...(embedding === undefined ? {} : summary(embedding, embeddingRuns)),
  ...(classification === undefined
    ? {}
    : {
        classification: {
          ...summary(classification, classificationRuns),
          max_length: classificationSpec.maxLength,
        },
      }),
  ...(int8 === undefined
    ? {}
    : {
        int8: {
          ratios: {
            vs_raw: spread(int8.runs).median,
            vs_raw_one_row: spread(int8.runs, 'rawOneRow').median,
            vs_raw_shared: spread(int8.runs, 'rawShared').median,
            vs_best_raw: spread(int8.runs, 'bestRaw').median,
            vs_ours_priced_by_characters: spread(int8.runs, 'oursByCharacters').median,
            vs_ours_budget_256: spread(int8.runs, 'oursBudget256').median,
          },
          ...spreadFields(int8.runs),
          ...(int8.runs.length < 2
            ? {}
            : {
                vs_raw_one_row_spread: spread(int8.runs, 'rawOneRow'),
                vs_raw_shared_spread: spread(int8.runs, 'rawShared'),
                vs_ours_priced_by_characters_spread: spread(int8.runs, 'oursByCharacters'),
                vs_ours_budget_256_spread: spread(int8.runs, 'oursBudget256'),
              }),
          // Medians over the turns; total is each turn's sum over kinds, then the median.
          cpu_ms_per_record: cpuMedians(int8.runs),
          raw: describeConfig(int8.raw),
        },
      }),
});

async function runOnDevice(deviceId: number | undefined): Promise<void> {
  const device = deviceId === undefined ? 'cpu (smoke run, not a measurement)' : `cuda:${deviceId}`;
  // The whole corpus (6,046 texts): a GPU pass over 2,000 would be over in a blink.
  const all = loadTexts(6000);
  const texts = values.texts === '2000' ? all : all.slice(0, Number(values.texts));
  const input = {
    deviceId,
    texts,
    cpuTexts: texts.slice(0, Number(values['cpu-texts'])),
    warmup: loadTexts(256, 3),
    passes: Number(values.passes),
    cudaThreads: values['cuda-threads'].split(',').map(Number),
    tokenPricing: values['token-pricing'],
    rawWorkers: values['raw-workers'].split(',').map(Number),
    tjsBatchSizes: values['tjs-batch-sizes'].split(',').map(Number),
    tjsTexts: Number(values['tjs-texts']),
    log,
  };
  const reports: Record<string, DeviceReport> = {};
  const specs = [embeddingSpec, fp16Spec, classificationSpec];
  for (const spec of specs) {
    if (!wants(spec.name)) continue;
    if (!existsSync(join(spec.modelFolder, onnxFileOf(spec)))) {
      log(
        `${spec.name}: no ${onnxFileOf(spec)} in ${spec.modelFolder} (npm run models:ensure makes it): skipped`,
      );
      continue;
    }
    try {
      reports[spec.name] = await benchOnDevice(spec, input);
    } catch (err) {
      log(
        `${spec.name}: failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
      );
    }
    // Written after every task, so that a device call cut off at its limit keeps what it did.
    mkdirSync('.cache/bench', { recursive: true });
    writeFileSync(
      '.cache/bench/throughput-device.json',
      JSON.stringify({ device, cores, reports }, null, 2),
    );
  }
  const summarize = (r: DeviceReport): Record<string, unknown> => ({
    ratios: {
      vs_raw: round(r.rps.ours / r.rps.raw),
      vs_transformers_js: round(r.rps.ours / r.rps.transformers_js),
      gpu_vs_cpu: round(r.rps.ours / r.rps.cpu_engine),
    },
    rps: Object.fromEntries(Object.entries(r.rps).map(([k, v]) => [k, round(v, 1)])),
    raw: r.raw,
    transformers_js: r.transformersJs,
    ours_trials: r.oursTrials,
    token_pricing_ceiling_rps: round(r.tokenPricingCeilingRps, 1),
    max_abs_diff_vs_cpu: Number(r.maxAbsDiffVsCpu.toPrecision(3)),
    // fp16 against the fp32 CPU engine: the tolerance its parity test holds on CPU.
    ...(r.task === 'fp16'
      ? { within_fp16_tolerance: r.maxAbsDiffVsCpu <= FP16_TOLERANCE.maxAbs }
      : {}),
    label_mismatches_vs_cpu: r.labelMismatchesVsCpu,
  });
  const [first, ...rest] = Object.values(reports);
  writeResultLine({
    bench: 'throughput',
    device,
    cores,
    ...(first === undefined ? {} : { [first.task]: summarize(first) }),
    ...Object.fromEntries(rest.map((r) => [r.task, summarize(r)])),
    ...(reports['fp16'] !== undefined && reports['embedding'] !== undefined
      ? { fp16_vs_fp32: round(reports['fp16'].rps.ours / reports['embedding'].rps.ours) }
      : {}),
  });
}
