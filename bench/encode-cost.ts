// npm run bench:encode-cost — what one e-mail's encode costs where an inference thread makes it
// and where the main thread's burst encoder makes it (docs/batching.md, "Encodings carried to the
// threads"). On one thread, over the same texts (int8 all-MiniLM-L6-v2, 256 tokens), per text:
//   after_run  each text encoded alone right after a model run (an inference thread's lone
//              encode before encodings were carried)
//   in_a_row   each text encoded alone, one after another, no run between
//   burst      the texts encoded 64 to a call (BurstEncoder's calls), no run between
// Wall milliseconds and core-milliseconds (user + sys of the process: the tokenizers package
// encodes on libuv's pool, and a call of many texts on its own Rust threads) per text. Rounds take
// turns; the line gives each figure's median over rounds. Options: --texts N (300), --rounds N (5).
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BURST_TEXTS } from '../src/engine/burst-encoder.ts';
import { ModelStore } from '../src/pipelines/runtime/model-store.ts';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import type { OrtSession } from '../src/runtime/session.ts';
import { INT8_EMBEDDING } from './lib/contenders.ts';
import { loadTexts } from './lib/corpus.ts';
import { idsFeeds } from './lib/raw-feeds.ts';
import { percentile, round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  options: {
    texts: { type: 'string', default: '300' },
    rounds: { type: 'string', default: '5' },
  },
});
const count = Number(values.texts);
const rounds = Number(values.rounds);
const MAX_LENGTH = 256;
const folder = INT8_EMBEDDING.modelFolder;
const texts = loadTexts(count);
const store = new ModelStore();
const model = await store.load({ path: folder, runtime: { binding: 'native' } });
const session = model.session;
const tokenizer = await TextTokenizer.load(folder);
const ids = (await tokenizer.encode(texts, { maxLength: MAX_LENGTH })).map((e) => e.ids);

const coreMs = (): number => {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1000;
};

interface Cost {
  wallMs: number;
  coreMs: number;
}

async function afterRun(s: OrtSession): Promise<Cost> {
  let wall = 0;
  let core = 0;
  for (const [i, text] of texts.entries()) {
    await s.run(idsFeeds([ids[i] as number[]], s.inputNames));
    const started = performance.now();
    const before = coreMs();
    await tokenizer.encode([text], { maxLength: MAX_LENGTH });
    wall += performance.now() - started;
    core += coreMs() - before;
  }
  return { wallMs: wall / count, coreMs: core / count };
}

async function timed(body: () => Promise<void>): Promise<Cost> {
  const started = performance.now();
  const before = coreMs();
  await body();
  return { wallMs: (performance.now() - started) / count, coreMs: (coreMs() - before) / count };
}

const inARow = (): Promise<Cost> =>
  timed(async () => {
    for (const text of texts) await tokenizer.encode([text], { maxLength: MAX_LENGTH });
  });
const burst = (): Promise<Cost> =>
  timed(async () => {
    for (let i = 0; i < count; i += BURST_TEXTS)
      await tokenizer.encode(texts.slice(i, i + BURST_TEXTS), { maxLength: MAX_LENGTH });
  });

const runs: Record<'after_run' | 'in_a_row' | 'burst', Cost[]> = {
  after_run: [],
  in_a_row: [],
  burst: [],
};
await inARow(); // warm-up: the tokenizer's first calls and the session's first shapes
for (let r = 0; r < rounds; r += 1) {
  runs.after_run.push(await afterRun(session));
  runs.in_a_row.push(await inARow());
  runs.burst.push(await burst());
  process.stderr.write(
    `round ${r + 1}: ${Object.entries(runs)
      .map(([k, v]) => `${k} ${(v.at(-1) as Cost).wallMs.toFixed(3)} ms`)
      .join(', ')}\n`,
  );
}
await store.close();

const median = (costs: Cost[], key: keyof Cost): number =>
  round(
    percentile(
      costs.map((c) => c[key]),
      50,
    ),
    3,
  );
const figures = Object.fromEntries(
  Object.entries(runs).map(([k, v]) => [
    k,
    { wall_ms: median(v, 'wallMs'), core_ms: median(v, 'coreMs') },
  ]),
);
writeResultLine({
  bench: 'encode-cost',
  model: folder,
  texts: count,
  rounds,
  max_length: MAX_LENGTH,
  burst_texts: BURST_TEXTS,
  per_text: figures,
  ratios: {
    after_run_vs_burst_core: round(
      (figures['after_run']?.core_ms ?? NaN) / (figures['burst']?.core_ms ?? NaN),
      2,
    ),
  },
});
