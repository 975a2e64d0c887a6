// npm run bench:throughput — issue 5's side-by-side throughput run. Every contender embeds (then
// classifies) the same spam-assassin texts with the same ONNX file on the same cores:
//   raw             ONNX Runtime alone on pre-tokenized, length-sorted, fixed batches (the limit)
//   ours            the in-process engine, every record submitted at once
//   transformers.js @huggingface/transformers' pipeline, best of batch 1 and 32
//   fifo            our pool with first-in-first-out batches of 32 (the ablation)
// It logs progress, writes the full report to .cache/bench/throughput.json and ends with one
// JSON line. Options: --texts N (default 2000), --cls-texts N (default 512), --latency N (120),
// --cls-latency N (64).
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { CLASSIFICATION, EMBEDDING } from './lib/contenders.ts';
import { loadTexts } from './lib/corpus.ts';
import { round } from './lib/stats.ts';
import { benchTask, type TaskReport } from './lib/task-bench.ts';

const { values } = parseArgs({
  options: {
    texts: { type: 'string', default: '2000' },
    'cls-texts': { type: 'string', default: '512' },
    latency: { type: 'string', default: '120' },
    'cls-latency': { type: 'string', default: '64' },
    /** One task alone, for a quicker look: embedding or classification. */
    only: { type: 'string' },
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
const only = values.only;
if (only !== undefined && only !== 'embedding' && only !== 'classification')
  throw new Error(`--only must be 'embedding' or 'classification', not '${only}'`);
const embedding =
  only === 'classification'
    ? undefined
    : await benchTask(EMBEDDING, {
        texts: loadTexts(embeddingCount),
        spare: loadTexts(400, 7),
        latencyRecords: Number(values.latency),
        cores,
        calibration: 64,
        log,
      });
const classification =
  only === 'embedding'
    ? undefined
    : await benchTask(CLASSIFICATION, {
        texts: loadTexts(classificationCount),
        spare: loadTexts(400, 7),
        ...(embedding === undefined ? {} : { transformersJsBatch: embedding.transformersJsBatch }),
        latencyRecords: Number(values['cls-latency']),
        cores,
        calibration: 16,
        log,
      });

function summary(report: TaskReport): Record<string, unknown> {
  return {
    ratios: {
      vs_raw: round(report.rps.ours / report.rps.raw),
      vs_transformers_js: round(report.rps.ours / report.rps.transformers_js),
      vs_fifo: round(report.rps.ours / report.rps.fifo),
    },
    padding_efficiency: round(report.paddingEfficiency.ours),
    p99_ms: round(report.latency.p99Ms, 1),
    p99_bound_ms: round(report.latency.boundMs, 1),
    max_abs_diff: Number(report.maxAbsDiff.toPrecision(3)),
    max_abs_diff_over_length: Number(report.maxAbsDiffTruncated.toPrecision(3)),
    label_mismatches: report.labelMismatches,
  };
}

mkdirSync('.cache/bench', { recursive: true });
writeFileSync(
  '.cache/bench/throughput.json',
  JSON.stringify(
    { cores, seconds: (performance.now() - started) / 1000, embedding, classification },
    null,
    2,
  ),
);
log('full report in .cache/bench/throughput.json');
process.stdout.write(
  `${JSON.stringify({
    bench: 'throughput',
    ...(embedding === undefined ? {} : summary(embedding)),
    ...(classification === undefined ? {} : { classification: summary(classification) }),
  })}\n`,
);
