// npm run bench:pricing — what pricing an input costs the main process, side by side on the same
// texts: the full untruncated tokenization (the engine's pricing before prefixes), token pricing
// as it is now (a word-aligned prefix settles texts past the cap), and the characters estimate.
// Each is timed one text at a time (a record's own cost) and all at once (a burst of submissions);
// the best of --rounds counts. Then what each pricing does to the batches: the texts go through
// the engine's queue (CPU defaults, budgets --budgets) priced each way, and the padding efficiency
// is counted on their true token lengths (the engine's own statistic counts the prices, which for
// 'characters' are estimates). Options: --texts N (2000), --rounds N (3), --max-length N (256),
// --budgets 256,512.
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { BatchQueue } from '../src/batching/batch-queue.ts';
import { compileBatcherOptions, DEFAULT_BATCH_TOKENS } from '../src/batching/batcher-options.ts';
import { inputCost, type CostContext } from '../src/engine/input-cost.ts';
import { TextTokenizer } from '../src/pipelines/runtime/text-tokenizer.ts';
import { loadTexts } from './lib/corpus.ts';
import { round } from './lib/stats.ts';
import { writeResultLine } from './lib/run-record.ts';

const { values } = parseArgs({
  options: {
    texts: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '3' },
    'max-length': { type: 'string', default: '256' },
    model: { type: 'string', default: 'models/all-MiniLM-L6-v2-int8' },
    budgets: { type: 'string', default: `${DEFAULT_BATCH_TOKENS.cpu},512` },
  },
});
const texts = loadTexts(Number(values.texts));
const tokenizer = await TextTokenizer.load(values.model);
const maxLength = Number(values['max-length']);
const context = (pricing: 'tokens' | 'characters'): CostContext => ({
  task: 'featureExtraction',
  tokenizer,
  options: { maxLength },
  pricing,
});

type Price = (text: string) => Promise<number>;
const contenders: Record<string, Price> = {
  full: async (text) => {
    const [encoded] = await tokenizer.encode([text], { truncation: false });
    return Math.min(encoded?.ids.length ?? 1, maxLength);
  },
  prefix: async (text) => (await inputCost(text, context('tokens'))).tokens,
  characters: async (text) => (await inputCost(text, context('characters'))).tokens,
};

async function rate(price: Price, burst: boolean): Promise<number> {
  let best = Infinity;
  for (let r = 0; r < Number(values.rounds); r += 1) {
    const started = performance.now();
    if (burst) await Promise.all(texts.map(price));
    else for (const text of texts) await price(text);
    best = Math.min(best, (performance.now() - started) / 1000);
  }
  return texts.length / best;
}

// The prices themselves: token pricing must not change a single one.
let mismatches = 0;
for (const text of texts)
  if ((await contenders['full']!(text)) !== (await contenders['prefix']!(text))) mismatches += 1;

const oneByOne: Record<string, number> = {};
const allAtOnce: Record<string, number> = {};
for (const [name, price] of Object.entries(contenders)) {
  oneByOne[name] = round(await rate(price, false), 1);
  allAtOnce[name] = round(await rate(price, true), 1);
  process.stderr.write(`${name}: ${oneByOne[name]} rec/s one by one, ${allAtOnce[name]} at once\n`);
}
/**
 * Every text queued at once, priced by `price`, cut into batches as the engine cuts them; the
 * efficiency is real tokens over padded tokens, both from the true (truncated) lengths.
 */
async function paddingEfficiency(budget: number, price: Price): Promise<number> {
  const queue = new BatchQueue<number>(
    compileBatcherOptions({ maxBatchTokens: budget, maxQueued: texts.length + 1 }),
  );
  for (const [i, text] of texts.entries()) queue.push(i, await price(text), 0);
  let real = 0;
  let padded = 0;
  for (;;) {
    const { batch } = queue.cut(Number.MAX_SAFE_INTEGER, true);
    if (batch === undefined) break;
    const lengths = batch.map((item) => trueLengths[item.payload] ?? 0);
    real += lengths.reduce((sum, length) => sum + length, 0);
    padded += Math.max(...lengths) * lengths.length;
  }
  return real / padded;
}
const trueLengths = (await tokenizer.encode(texts, { maxLength })).map((e) => e.ids.length);
const padding: Record<string, Record<string, number>> = {};
for (const budget of values.budgets.split(',').map(Number)) {
  padding[`budget_${budget}`] = {
    tokens: round(await paddingEfficiency(budget, contenders['prefix']!), 4),
    characters: round(await paddingEfficiency(budget, contenders['characters']!), 4),
  };
}
process.stderr.write(`padding efficiency: ${JSON.stringify(padding)}\n`);

writeResultLine({
  bench: 'pricing',
  texts: texts.length,
  maxLength,
  ratios: {
    prefix_vs_full: round((allAtOnce['prefix'] ?? 0) / (allAtOnce['full'] ?? 1)),
    prefix_vs_full_one_by_one: round((oneByOne['prefix'] ?? 0) / (oneByOne['full'] ?? 1)),
  },
  records_per_s: { one_by_one: oneByOne, all_at_once: allAtOnce },
  price_mismatches: mismatches,
  padding_efficiency: padding,
});
