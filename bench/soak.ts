// npm run bench:soak — does the native binding leak? N threads share one native session of a tiny
// fixture model and run it --runs times in all (default 1,000,000; a tenth of them through an IO
// binding, a tenth on libuv's pool as runsPerThread runs them), with feeds of changing shapes made anew for every run. The process's resident memory
// is sampled as the runs go, each thread collecting its garbage before it reports (`node --expose-gc`, as the npm script runs it),
// so a sample is what is held and not garbage yet to be collected; after the first --warmup share of the runs (arena and memory patterns
// settled), a least-squares line through the samples gives the slope in KiB per 100,000 runs. A
// leak of even one small native object a run would show as tens of KiB per 100,000 runs.
// Options: --runs N, --threads N (cores), --model DIR (the BERT classification fixture),
// --warmup F (0.2), --samples N (200).
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';
import { SharedSessions } from '../src/runtime/native/shared-sessions.ts';
import { releaseSharedSessions } from '../src/runtime/native/release-shared.ts';
import { round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '1000000' },
    threads: { type: 'string', default: String(availableParallelism()) },
    model: { type: 'string', default: 'test/fixtures/models/bert-text-classification' },
    warmup: { type: 'string', default: '0.2' },
    samples: { type: 'string', default: '200' },
  },
});
const runs = Number(values.runs);
const threads = Number(values.threads);
const perThread = Math.ceil(runs / threads);
const every = Math.max(1, Math.floor(runs / Number(values.samples) / threads));

function rssKiB(): number {
  const status = readFileSync('/proc/self/status', 'utf8');
  return Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? process.memoryUsage.rss() / 1024);
}

const table = SharedSessions.allocate();
const worker = new URL('./lib/soak-worker.ts', import.meta.url);
const samples: { runs: number; kib: number }[] = [];
let done = 0;
const started = performance.now();
await Promise.all(
  Array.from(
    { length: threads },
    (_, seed) =>
      new Promise<void>((resolve, reject) => {
        const thread = new Worker(worker, {
          workerData: {
            onnxPath: join(values.model, 'model.onnx'),
            table,
            runs: perThread,
            every,
            seed,
          },
        });
        thread.on('message', (message: unknown) => {
          if (message === 'done') return void thread.terminate().then(() => resolve());
          done += Number(message);
          samples.push({ runs: done, kib: rssKiB() });
          if (samples.length % 20 === 0)
            process.stderr.write(`${done} runs, RSS ${(rssKiB() / 1024).toFixed(1)} MiB\n`);
        });
        thread.once('error', reject);
      }),
  ),
);
const seconds = (performance.now() - started) / 1000;
const leftInTable = new SharedSessions(table).size;
releaseSharedSessions(table);

const steady = samples.filter((s) => s.runs >= runs * Number(values.warmup));
const n = steady.length;
const mx = steady.reduce((a, s) => a + s.runs, 0) / n;
const my = steady.reduce((a, s) => a + s.kib, 0) / n;
const slope =
  steady.reduce((a, s) => a + (s.runs - mx) * (s.kib - my), 0) /
  steady.reduce((a, s) => a + (s.runs - mx) ** 2, 0);
const first = steady[0];
const last = steady.at(-1);
writeResultLine({
  bench: 'soak',
  runs: done,
  threads,
  model: values.model,
  seconds: round(seconds, 1),
  runs_per_s: Math.round(done / seconds),
  rss_slope_kib_per_100k_runs: round(slope * 100_000, 2),
  rss_mib: {
    after_warmup: first === undefined ? undefined : round(first.kib / 1024, 1),
    end: last === undefined ? undefined : round(last.kib / 1024, 1),
    max: round(Math.max(...steady.map((s) => s.kib)) / 1024, 1),
  },
  samples: n,
  sessions_left_in_table: leftInTable,
});
