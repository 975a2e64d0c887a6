// A bare ONNX Runtime session on its own thread for the raw contenders: it receives batches of
// token ids and runs them, nothing else, so a pool of these measures what the cores can do.
// Per-thread (the 'raw' contender): an onnxruntime-node session of its own. Shared (the
// 'raw-shared' contender, the Go and C++ servers' layout): one C-API session for all the pool's
// threads, through our native binding's table.
import { parentPort, workerData } from 'node:worker_threads';
import { InferenceSession } from 'onnxruntime-node';
import { createNativeSession } from '../../src/runtime/native/native-session.ts';
import { SharedSessions } from '../../src/runtime/native/shared-sessions.ts';
import { sharedIntraOpThreads } from '../../src/runtime/runtimes.ts';
import { compileRuntimeOptions } from '../../src/runtime/runtime-options.ts';
import type { Feeds } from '../../src/runtime/session.ts';
import { idsFeeds } from './raw-feeds.ts';

interface Setup {
  onnxPath: string;
  intraOpThreads: number;
  /** Default: the CPU. */
  executionProviders?: InferenceSession.ExecutionProviderConfig[];
  /** The pool's table when its threads share one native session. */
  shared?: { table: SharedArrayBuffer; workers: number };
}

const setup = workerData as Setup;
const session: { run(feeds: Feeds): Promise<unknown>; readonly inputNames: readonly string[] } =
  setup.shared === undefined
    ? await InferenceSession.create(setup.onnxPath, {
        intraOpNumThreads: setup.intraOpThreads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        executionProviders: setup.executionProviders ?? ['cpu'],
      })
    : createNativeSession(
        setup.onnxPath,
        compileRuntimeOptions({
          binding: 'native',
          intraOpThreads: setup.intraOpThreads,
          interOpThreads: 1,
          graphOptimizationLevel: 'all',
        }),
        {
          shared: new SharedSessions(setup.shared.table),
          intraOpThreads: sharedIntraOpThreads(setup.intraOpThreads, setup.shared.workers),
        },
      );
const port = parentPort;
if (port === null) throw new Error('raw-worker must run as a worker thread');
port.on('message', (batch: number[][]) => {
  void session
    .run(idsFeeds(batch, session.inputNames))
    .then(() => port.postMessage('done'))
    .catch((err: unknown) => port.postMessage({ error: String(err) }));
});
port.postMessage('ready');
