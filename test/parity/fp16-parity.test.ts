// float16 encoders (issue 31): model_fp16.onnx, the kind of file model repositories publish for
// GPUs, here MiniLM's float16 copy that `npm run models:ensure` makes with ONNX Runtime's
// converter (scripts/models/kit/half_precision.py). Its outputs are float16 too, so this proves
// the engine's whole fp16 path on CPU memory: host pooling decodes the halves, device pooling
// feeds them to the pooling graph (which casts them first). Runs once per binding; on
// onnxruntime-node, which cannot be fed float16 on Node 23+, featureExtraction pools in JS.
//
// The stated tolerance (FP16_TOLERANCE): against the fp32 references of sentence-transformers
// (torch), every text's fp16 embedding within cosine 0.99999 and every component within 1e-3
// (measured when this was written, on every one of the 300 reference texts: worst cosine
// 0.9999986, worst component 3.1e-4; float16 keeps 11 significant bits, and over six layers the
// hidden states drift by up to ~1e-2, which pooling over the tokens averages down). Every fifth
// reference text is checked (ham, hard ham and spam alike): ONNX Runtime's CPU float16 kernels
// are slow, and the other four fifths add time, not cases.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect } from 'vitest';
import {
  FeatureExtractionPipeline,
  type FeatureExtractionOptions,
} from '../../src/pipelines/text/feature-extraction.ts';
import { ModelStore, type ModelSpec } from '../../src/pipelines/runtime/model-store.ts';
import { missingWeights, whenFetched } from './fetched-models.ts';
import { agreement, corpusTextsOf, readMiniLmReferences } from './real-weight-references.ts';
import { FP16_TOLERANCE } from '../../src/runtime/half-float.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const FOLDER = join(ROOT, '.cache', 'models', 'all-MiniLM-L6-v2');
const CORPUS = join(ROOT, '.cache', 'corpus', 'spam-assassin.jsonl');
const fetched = existsSync(join(FOLDER, 'model_fp16.onnx')) && existsSync(CORPUS);

const { cosine: FP16_COSINE, maxAbs: FP16_MAX_ABS } = FP16_TOLERANCE;

const store = new ModelStore();
afterAll(() => store.close());

/** Every fifth reference text and its sentence-transformers embedding. */
function references(): { texts: string[]; embeddings: ArrayLike<number>[] } {
  const { corpusIds, embeddings } = readMiniLmReferences();
  const every = (_: unknown, i: number): boolean => i % 5 === 0;
  return {
    texts: corpusTextsOf(corpusIds, CORPUS).filter(every),
    embeddings: embeddings.filter(every),
  };
}

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

describe('fp16 MiniLM (model_fp16.onnx) against fp32', () => {
  for (const poolingOn of ['host', 'device'] as const)
    whenFetched(fetched)(
      `keeps every fifth reference text within the stated tolerance of sentence-transformers, pooling on the ${poolingOn} (needs npm run models:ensure)`,
      async () => {
        if (!fetched) throw missingWeights('all-MiniLM-L6-v2 model_fp16.onnx (or the corpus)');
        const { texts, embeddings } = references();
        expect(texts).toHaveLength(60);
        expect(texts.filter((t) => t === '')).toEqual([]);
        const half = await embed(
          { path: FOLDER, variant: 'fp16', runtime: { poolingOn } },
          {},
          texts,
        );
        expect(half).toHaveLength(texts.length);
        expect(half[0]).toHaveLength(384);
        const vsTorch = agreement(half, embeddings);
        expect(vsTorch.cosine).toBeGreaterThanOrEqual(FP16_COSINE);
        expect(vsTorch.maxAbs).toBeLessThanOrEqual(FP16_MAX_ABS);
        if (poolingOn === 'device') return;
        // Not the fp32 numbers by accident: the half copy must actually differ from them.
        const full = await embed(
          { path: FOLDER, onnxFile: 'model.onnx', runtime: { poolingOn } },
          {},
          texts,
        );
        const vsFp32 = agreement(half, full);
        expect(vsFp32.maxAbs).toBeGreaterThan(0);
        expect(vsFp32.maxAbs).toBeLessThanOrEqual(FP16_MAX_ABS);
      },
    );

  whenFetched(fetched)(
    'pools on the host and on the device alike from the same float16 hidden states',
    async () => {
      if (!fetched) throw missingWeights('all-MiniLM-L6-v2 model_fp16.onnx');
      const texts = [
        'Hello world, this is a short test.',
        'Buy cheap meds now!!! Click here to unsubscribe from our list of offers.',
        'The meeting moved to Thursday at 10am; the agenda is attached.',
      ];
      for (const options of [
        {},
        { pooling: 'cls' },
        { pooling: 'max', normalize: false },
      ] as const) {
        const spec = { path: FOLDER, variant: 'fp16' } as const;
        const host = await embed({ ...spec, runtime: { poolingOn: 'host' } }, options, texts);
        const device = await embed({ ...spec, runtime: { poolingOn: 'device' } }, options, texts);
        // float32 sums in ONNX Runtime against float64 sums in JS, over the same halves.
        expect(agreement(device, host).maxAbs).toBeLessThanOrEqual(1e-5);
      }
    },
  );
});
