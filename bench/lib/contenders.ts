// What differs between the two benchmarked tasks: the model, how every contender truncates, how
// transformers.js is driven, and how an output becomes numbers to compare across contenders.
import type { EnginePipeline } from '../../src/engine/engine.ts';
import type { FeatureExtractionResult } from '../../src/pipelines/feature-extraction.ts';
import type { LabelScore } from '../../src/pipelines/text-classification.ts';
import { stageModel, tjsClassifier, tjsEmbedder } from './transformers-js.ts';

/** One record's output reduced to a label (or '') and the numbers compared across contenders. */
export interface Comparable {
  label: string;
  values: ArrayLike<number>;
}

export interface TjsRunner {
  run(texts: string[]): Promise<Comparable[]>;
  close(): Promise<void>;
}

export interface TaskSpec {
  name: 'embedding' | 'classification';
  modelFolder: string;
  /** Truncation length every contender applies. */
  maxLength: number;
  pipeline: Omit<EnginePipeline, 'model'>;
  /** Raw batch sizes tried before the timed raw run. */
  rawBatchSizes: number[];
  ours(output: unknown): Comparable;
  transformersJs(intraOpThreads: number): Promise<TjsRunner>;
}

export const EMBEDDING: TaskSpec = {
  name: 'embedding',
  modelFolder: '.cache/models/all-MiniLM-L6-v2',
  // sentence-transformers' max_seq_length for this model.
  maxLength: 256,
  pipeline: {
    task: 'featureExtraction',
    options: { pooling: 'mean', normalize: true, maxLength: 256 },
  },
  rawBatchSizes: [1, 4, 8, 32],
  ours: (output) => ({ label: '', values: output as FeatureExtractionResult as Float32Array }),
  async transformersJs(intraOpThreads) {
    const embedder = await tjsEmbedder(
      stageModel(this.modelFolder, this.maxLength),
      intraOpThreads,
    );
    return {
      run: async (texts) => (await embedder.embed(texts)).map((values) => ({ label: '', values })),
      close: () => embedder.close(),
    };
  },
};

export const CLASSIFICATION: TaskSpec = {
  name: 'classification',
  modelFolder: '.cache/models/distilbert-base-classifier',
  maxLength: 512,
  pipeline: { task: 'textClassification', options: { topK: 1 } },
  rawBatchSizes: [1, 4, 16],
  ours: (output) => {
    const [best] = output as LabelScore[];
    return { label: best?.label ?? '', values: [best?.score ?? NaN] };
  },
  async transformersJs(intraOpThreads) {
    const classifier = await tjsClassifier(
      stageModel(this.modelFolder, this.maxLength),
      intraOpThreads,
    );
    return {
      run: async (texts) =>
        (await classifier.classify(texts)).map(({ label, score }) => ({ label, values: [score] })),
      close: () => classifier.close(),
    };
  },
};
