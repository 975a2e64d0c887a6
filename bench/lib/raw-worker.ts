// A bare ONNX Runtime session on its own thread for the raw contenders: it receives batches of
// token ids and runs them, nothing else, so a pool of these measures what the cores can do.
// Per-thread (the 'raw' contender): an onnxruntime-node session of its own. Shared (the
// 'raw-shared' contender, the Go and C++ servers' layout): one C-API session for all the pool's
// threads, through our native binding's table. Pooled (the GPU's raw, issue 31): the shared
// session linked to the pooling graph on its device, so only [batch, dim] comes to the host, as
// a hand-written C++ server with IO binding would do it. Tokenizing (the Go server as the issue
// measured it, Hugot tokenizing in each goroutine): the thread gets a batch's texts and encodes
// them itself before the run, so the tokenizer's CPU counts as ours' does.
import { parentPort, workerData } from 'node:worker_threads';
import { InferenceSession } from 'onnxruntime-node';
import { createNativeSession } from '../../src/runtime/native/open-session.ts';
import { SharedSessions } from '../../src/runtime/native/shared-sessions.ts';
import { sharedIntraOpThreads } from '../../src/runtime/runtimes.ts';
import { compileRuntimeOptions } from '../../src/runtime/runtime-options.ts';
import type { Feeds, OrtSession } from '../../src/runtime/session.ts';
import { POOLING_INPUTS, poolingGraph } from '../../src/runtime/graphs/pooling-graph.ts';
import { TextTokenizer } from '../../src/pipelines/runtime/text-tokenizer.ts';
import { idsFeeds } from './raw-feeds.ts';

interface Setup {
  onnxPath: string;
  intraOpThreads: number;
  /** Default: the CPU. */
  executionProviders?: InferenceSession.ExecutionProviderConfig[];
  /** The pool's table when its threads share one native session. */
  shared?: { table: SharedArrayBuffer; workers: number };
  /** Shared sessions only: mean-pool and normalize on the session's device (a linked run). */
  pooled?: boolean;
  /** Shared sessions only: runs the thread keeps going at once on libuv's pool (default 1). */
  runsPerThread?: number;
  /**
   * ONNX Runtime's memory pattern, on by its own default as a server on the C API gets it (ours
   * is off on CPU: src/runtime/runtime-options.ts).
   */
  memPattern: boolean;
  /** Batches come as texts, encoded on the thread with the model folder's tokenizer. */
  tokenizer?: { folder: string; maxLength: number };
}

const setup = workerData as Setup;
const session: {
  run(feeds: Feeds): Promise<unknown>;
  runLinked?: OrtSession['runLinked'];
  readonly inputNames: readonly string[];
} =
  setup.shared === undefined
    ? await InferenceSession.create(setup.onnxPath, {
        intraOpNumThreads: setup.intraOpThreads,
        interOpNumThreads: 1,
        graphOptimizationLevel: 'all',
        enableMemPattern: setup.memPattern,
        executionProviders: setup.executionProviders ?? ['cpu'],
      })
    : createNativeSession(setup.onnxPath, nativeOptions(), {
        shared: new SharedSessions(setup.shared.table),
        intraOpThreads: sharedIntraOpThreads(
          setup.intraOpThreads,
          setup.shared.workers * (setup.runsPerThread ?? 1),
        ),
        runsOffThread: (setup.runsPerThread ?? 1) > 1,
      });
const pooler: OrtSession | undefined =
  setup.shared !== undefined && setup.pooled === true
    ? createNativeSession(
        {
          name: 'raw-pooling',
          bytes: poolingGraph({ pooling: 'mean', normalize: true, hiddenType: hiddenType() }),
        },
        nativeOptions(),
        { intraOpThreads: 1 },
      )
    : undefined;

/** float16 for a model_fp16.onnx, whose hidden states the pooling graph casts first. */
function hiddenType(): 'float32' | 'float16' {
  const meta = (session as OrtSession).outputMetadata.find((m) => m.name === 'last_hidden_state');
  return meta?.isTensor === true && meta.type === 'float16' ? 'float16' : 'float32';
}

function nativeOptions(): ReturnType<typeof compileRuntimeOptions> {
  const providers = (setup.executionProviders ?? ['cpu']).map((p) =>
    typeof p === 'string'
      ? p
      : { name: p.name, ...('deviceId' in p ? { deviceId: p.deviceId } : {}) },
  );
  return compileRuntimeOptions({
    binding: 'native',
    intraOpThreads: setup.intraOpThreads,
    interOpThreads: 1,
    graphOptimizationLevel: 'all',
    memPattern: setup.memPattern,
    executionProviders: providers as never,
  });
}

function runBatch(batch: number[][]): Promise<unknown> {
  const feeds = idsFeeds(batch, session.inputNames);
  if (pooler === undefined || session.runLinked === undefined) return session.run(feeds);
  return session.runLinked({
    feeds,
    next: pooler,
    link: { [POOLING_INPUTS.hidden]: 'last_hidden_state' },
    nextFeeds: { [POOLING_INPUTS.mask]: idsFeeds(batch, ['attention_mask'])['attention_mask']! },
  });
}

const tokenizer =
  setup.tokenizer === undefined ? undefined : await TextTokenizer.load(setup.tokenizer.folder);

async function runMessage(batch: number[][] | string[]): Promise<unknown> {
  if (!isTexts(batch)) return runBatch(batch);
  if (tokenizer === undefined || setup.tokenizer === undefined)
    throw new Error('raw-worker got texts without a tokenizer');
  const encoded = await tokenizer.encode(batch, {
    truncation: 'longest_first',
    maxLength: setup.tokenizer.maxLength,
  });
  return runBatch(encoded.map((e) => e.ids));
}

function isTexts(batch: number[][] | string[]): batch is string[] {
  return typeof batch[0] === 'string';
}

const port = parentPort;
if (port === null) throw new Error('raw-worker must run as a worker thread');
port.on('message', (batch: number[][] | string[]) => {
  void runMessage(batch)
    .then(() => port.postMessage('done'))
    .catch((err: unknown) => port.postMessage({ error: String(err) }));
});
port.postMessage('ready');
