// featureExtraction pooling on the encoder's device (runtime.poolingOn: device): a linked run of
// the encoder and the pooling graph (src/runtime/graphs/pooling-graph.ts), the path a GPU shard
// takes by default, proven here on CPU memory. It must give what the JS pooling gives on the same
// model and texts, for every pooling the graph runs, and keep the fp32 model's agreement with
// sentence-transformers. Runs once per binding (the parity projects); onnxruntime-node's linked
// run goes through the host, ours through IO binding.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FeatureExtractionPipeline,
  type FeatureExtractionOptions,
} from '../../src/pipelines/text/feature-extraction.ts';
import { ModelStore, type ModelSpec } from '../../src/pipelines/runtime/model-store.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { corpusTextsOf, cosine, readMiniLmReferences } from './real-weight-references.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const INT8 = join(ROOT, 'models', 'all-MiniLM-L6-v2-int8');
const FP32 = join(ROOT, '.cache', 'models', 'all-MiniLM-L6-v2');
const CORPUS = join(ROOT, '.cache', 'corpus', 'spam-assassin.jsonl');
const SAMPLE = join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl');
const fetched = existsSync(join(FP32, 'model.onnx')) && existsSync(CORPUS);
/** float32 sums in ONNX Runtime against float64 sums in JS, on vectors of norm 1 or ~10. */
const TOLERANCE = 1e-5;

const sample = readFileSync(SAMPLE, 'utf8')
  .split('\n')
  .filter((line) => line !== '')
  .map((line) => (JSON.parse(line) as { text: string }).text);

const store = new ModelStore();
afterAll(() => store.close());

async function embed(
  spec: ModelSpec,
  options: FeatureExtractionOptions,
  texts: readonly string[],
): Promise<Float32Array[]> {
  const pipeline = new FeatureExtractionPipeline(await store.load(spec), options);
  const out: Float32Array[] = [];
  for (let start = 0; start < texts.length; start += 16)
    out.push(...((await pipeline.run(texts.slice(start, start + 16))) as Float32Array[]));
  return out;
}

function maxAbsDiff(a: readonly Float32Array[], b: readonly ArrayLike<number>[]): number {
  let worst = 0;
  a.forEach((row, i) =>
    row.forEach((v, h) => (worst = Math.max(worst, Math.abs(v - (b[i]?.[h] ?? NaN))))),
  );
  return worst;
}

describe('pooling on the encoder device', () => {
  const cases: [string, FeatureExtractionOptions][] = [
    ["the folder's sentence-transformers defaults (mean, normalized)", {}],
    ['mean, not normalized', { pooling: 'mean', normalize: false }],
    ['cls', { pooling: 'cls' }],
    ['max', { pooling: 'max', normalize: false }],
  ];
  it.each(cases)('gives what JS pooling gives on MiniLM int8: %s', async (_name, options) => {
    const host = await embed({ path: INT8, runtime: { poolingOn: 'host' } }, options, sample);
    const device = await embed({ path: INT8, runtime: { poolingOn: 'device' } }, options, sample);
    expect(device).toHaveLength(sample.length);
    expect(device[0]).toHaveLength(384);
    expect(maxAbsDiff(device, host)).toBeLessThanOrEqual(TOLERANCE);
  });

  it("leaves 'none' (a vector per token) to the host, the same as without it", async () => {
    const options: FeatureExtractionOptions = { pooling: 'none' };
    const texts = sample.slice(0, 4);
    const pipeline = new FeatureExtractionPipeline(
      await store.load({ path: INT8, runtime: { poolingOn: 'device' } }),
      options,
    );
    const device = (await pipeline.run(texts)) as Float32Array[][];
    const host = (await new FeatureExtractionPipeline(
      await store.load({ path: INT8, runtime: { poolingOn: 'host' } }),
      options,
    ).run(texts)) as Float32Array[][];
    expect(device.map((tokens) => tokens.length)).toEqual(host.map((tokens) => tokens.length));
    expect(device).toEqual(host);
  });

  whenFetched(fetched)(
    'keeps fp32 MiniLM within cosine 0.9999 of sentence-transformers on every corpus text (needs npm run models:ensure)',
    async () => {
      if (!fetched) throw missingWeights('all-MiniLM-L6-v2 fp32 (or the corpus)');
      const { corpusIds, embeddings } = readMiniLmReferences();
      const texts = corpusTextsOf(corpusIds, CORPUS);
      expect(texts.filter((t) => t === '')).toEqual([]);
      const spec = { path: FP32, onnxFile: 'model.onnx' };
      const device = await embed({ ...spec, runtime: { poolingOn: 'device' } }, {}, texts);
      const worst = Math.min(...device.map((v, i) => cosine(v, embeddings[i] ?? [])));
      expect(worst).toBeGreaterThanOrEqual(0.9999);
    },
  );
});
