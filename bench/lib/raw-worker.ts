// A bare ONNX Runtime session on its own thread for the raw contender: it receives batches of
// token ids and runs them, nothing else, so the pool of these measures what the cores can do.
import { parentPort, workerData } from 'node:worker_threads';
import { InferenceSession } from 'onnxruntime-node';
import { idsFeeds } from './raw-feeds.ts';

interface Setup {
  onnxPath: string;
  intraOpThreads: number;
  /** Default: the CPU. */
  executionProviders?: InferenceSession.ExecutionProviderConfig[];
}

const setup = workerData as Setup;
const session = await InferenceSession.create(setup.onnxPath, {
  intraOpNumThreads: setup.intraOpThreads,
  interOpNumThreads: 1,
  graphOptimizationLevel: 'all',
  executionProviders: setup.executionProviders ?? ['cpu'],
});
const port = parentPort;
if (port === null) throw new Error('raw-worker must run as a worker thread');
port.on('message', (batch: number[][]) => {
  void session
    .run(idsFeeds(batch, session.inputNames))
    .then(() => port.postMessage('done'))
    .catch((err: unknown) => port.postMessage({ error: String(err) }));
});
port.postMessage('ready');
