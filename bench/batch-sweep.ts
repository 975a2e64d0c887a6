// npm run bench:batch-sweep — how ONNX Runtime's records/s on CPU moves with the batch size, per
// length class of the corpus texts: the measurement behind the CPU token budget
// (docs/batching.md). Raw pool only (pre-tokenized, length-sorted, fixed batches), every
// configuration one after another on the same rows. Options: --model DIR, --max-length N,
// --texts N, --configs WORKERSxINTRAOPxBATCH,... (default 2x1x1,2x1x4,2x1x8,2x1x16,2x1x32),
// --ranges LO-HI,... (token-length classes; default the whole set).
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import { loadTexts } from './lib/corpus.ts';
import { RawPool, sortedBatches } from './lib/raw-pool.ts';
import { round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  options: {
    model: { type: 'string', default: '.cache/models/all-MiniLM-L6-v2' },
    'max-length': { type: 'string', default: '256' },
    texts: { type: 'string', default: '256' },
    configs: { type: 'string', default: '2x1x1,2x1x4,2x1x8,2x1x16,2x1x32' },
    ranges: { type: 'string', default: '0-100000' },
  },
});
const tokenizer = await TextTokenizer.load(values.model);
const texts = loadTexts(Number(values.texts));
const rows: number[][] = [];
for (let i = 0; i < texts.length; i += 32) {
  const encoded = await tokenizer.encode(texts.slice(i, i + 32), {
    truncation: 'longest_first',
    maxLength: Number(values['max-length']),
  });
  rows.push(...encoded.map((e) => e.ids));
}

const results: Record<string, Record<string, number>> = {};
for (const range of values.ranges.split(',')) {
  const [lo = 0, hi = Infinity] = range.split('-').map(Number);
  const kept = rows.filter((r) => r.length >= lo && r.length <= hi);
  const byConfig: Record<string, number> = { rows: kept.length };
  for (const config of values.configs.split(',')) {
    const [workers = 1, intraOp = 1, batchSize = 1] = config.split('x').map(Number);
    const pool = await RawPool.start(`${values.model}/model.onnx`, {
      workers,
      intraOpThreads: intraOp,
    });
    try {
      const batches = sortedBatches(kept, batchSize);
      await pool.run(batches.slice(-workers));
      const started = performance.now();
      await pool.run(batches);
      byConfig[config] = round(kept.length / ((performance.now() - started) / 1000));
    } finally {
      await pool.close();
    }
    process.stderr.write(`${range} ${config}: ${byConfig[config]} records/s\n`);
  }
  results[range] = byConfig;
}
writeResultLine({ bench: 'batch-sweep', model: values.model, records_per_s: results });
