// One transformers.js pipeline behind the contenders' runner interface: what a worker thread of
// the transformers.js contender holds (tjs-worker.ts), one pipeline per thread, as a user who
// wants more than one core from it has to run it (its `run` is synchronous on its JS thread, so
// two pipelines on one thread take turns).
import { tjsClassifier, tjsEmbedder, type TjsDevice } from './transformers-js.ts';

/** One record's output reduced to a label (or '') and the numbers compared across contenders. */
export interface Comparable {
  label: string;
  values: ArrayLike<number>;
}

export interface TjsRunner {
  run(texts: string[]): Promise<Comparable[]>;
  close(): Promise<void>;
}

/** What a thread loads: the pipeline's kind, the staged model's name (stageModel), its threads. */
export interface TjsSetup {
  kind: 'embedder' | 'classifier';
  model: string;
  intraOpThreads: number;
  device: TjsDevice;
}

export async function tjsRunner(setup: TjsSetup): Promise<TjsRunner> {
  if (setup.kind === 'embedder') {
    const embedder = await tjsEmbedder(setup.model, setup.intraOpThreads, setup.device);
    return {
      run: async (texts) => (await embedder.embed(texts)).map((values) => ({ label: '', values })),
      close: () => embedder.close(),
    };
  }
  const classifier = await tjsClassifier(setup.model, setup.intraOpThreads, setup.device);
  return {
    run: async (texts) =>
      (await classifier.classify(texts)).map(({ label, score }) => ({ label, values: [score] })),
    close: () => classifier.close(),
  };
}
