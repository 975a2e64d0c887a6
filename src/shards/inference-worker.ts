// The body of every inference thread: it loads its shard's models and pipelines once, then runs
// whole batches. ONNX Runtime blocks the thread it runs on, which is why this is not the main one.
import { flushCompileCache } from 'node:module';
import { performance } from 'node:perf_hooks';
import { threadId, workerData } from 'node:worker_threads';
import { move, transferableSymbol, valueSymbol } from 'piscina';
import { serializeError } from '../errors.ts';
import { BusyClock } from './busy-clock.ts';
import { createHugot, type Hugot } from '../hugot.ts';
import { runsRowsAlone } from '../pipelines/row-by-row.ts';
import type { BatchResult, WorkerRequest, WorkerResponse, WorkerSetup } from './protocol.ts';

let loading: Promise<Hugot> | undefined;
const clock = new BusyClock(() => performance.now());

function load(): Promise<Hugot> {
  loading ??= (async () => {
    const setup = workerData as WorkerSetup;
    const hugot = createHugot({
      sharing: setup.sharing,
      tokenizersBuilt: setup.tokenizersBuilt,
      optionsCompiled: setup.optionsCompiled === true,
    });
    for (const [alias, spec] of Object.entries(setup.models)) hugot.registerModel(alias, spec);
    for (const [alias, definition] of Object.entries(setup.pipelines))
      await hugot.registerPipeline(alias, definition);
    // Every module this thread needs is loaded: written now (not when the thread ends, which a
    // terminated thread may never do), the next thread finds it in the compile cache.
    flushCompileCache();
    return hugot;
  })();
  // A failed load is retried by the next request instead of failing every request forever.
  loading.catch(() => (loading = undefined));
  return loading;
}

export default async function handle(request: WorkerRequest): Promise<WorkerResponse> {
  try {
    const hugot = await load();
    switch (request.kind) {
      case 'warmup':
        return {
          kind: 'ready',
          pipelines: hugot.aliases(),
          rowsAlone: hugot.aliases().filter((alias) => runsRowsAlone(hugot.pipeline(alias))),
          threadId,
        };
      case 'run': {
        const arrived = performance.now();
        const results: BatchResult[] = [];
        // The clock counts a later batch of the message from the end of the one before it.
        for (const batch of request.batches) {
          try {
            const outputs = await hugot.run(request.pipeline, batch.inputs, batch.encodings);
            results.push({ kind: 'outputs', outputs, computeMs: clock.finish(arrived) });
          } catch (err) {
            clock.finish(arrived);
            results.push({ kind: 'failed', error: serializeError(err) });
          }
        }
        return withTransfers({ kind: 'outputs', results, threadId }, transferables(results));
      }
    }
  } catch (err) {
    return { kind: 'failed', error: serializeError(err), threadId };
  }
}

/** piscina posts a movable reply with the listed buffers in its transfer list. */
function withTransfers(response: WorkerResponse, buffers: ArrayBuffer[]): WorkerResponse {
  const movable = { [transferableSymbol]: buffers, [valueSymbol]: response };
  return move(movable) as unknown as WorkerResponse;
}

/** Typed-array buffers in the outputs (embeddings) are moved to the main thread, not copied. */
function transferables(value: unknown, found: ArrayBuffer[] = [], depth = 0): ArrayBuffer[] {
  if (depth > 6 || value === null || typeof value !== 'object') return found;
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer && !found.includes(value.buffer))
      found.push(value.buffer);
    return found;
  }
  const children = Array.isArray(value) ? value : Object.values(value);
  for (const child of children) transferables(child, found, depth + 1);
  return found;
}
