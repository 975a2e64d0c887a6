// The body of a generation thread: it loads the model once and runs the step loop for as long as
// there is work, reading submits and cancels between steps. ONNX Runtime blocks the thread during
// a step, which is why this is never the main thread; messages wait at most one step.
import { flushCompileCache } from 'node:module';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { serializeError } from '../errors.ts';
import { ModelStore } from '../pipelines/runtime/model-store.ts';
import { checkModelFits } from '../models/model-fit.ts';
import { loadTask } from '../pipelines/task-modules.ts';
import { createLoop } from './create-loop.ts';
import type { FromWorker, GenerationWorkerSetup, SequenceEvent, ToWorker } from './protocol.ts';
import type { StepLoop } from './step-loop.ts';

const port = parentPort;
if (port === null) throw new Error('generation-worker.ts must run as a worker thread');
const setup = workerData as GenerationWorkerSetup;
const post = (message: FromWorker): void => port.postMessage(message);

let loop: StepLoop | undefined;
const early: ToWorker[] = [];
let submitting = 0;
let draining = false;
let wake: (() => void) | undefined;

port.on('message', (message: ToWorker) => {
  if (loop === undefined) early.push(message);
  else handle(loop, message);
});

function handle(target: StepLoop, message: ToWorker): void {
  switch (message.kind) {
    case 'submit':
      submitting += 1;
      void target
        .submit({
          id: message.id,
          input: message.input,
          options: message.options,
          deadlineAt: message.deadlineAt,
        })
        .then((failed) => {
          if (failed !== undefined) send([failed], target);
        })
        .finally(() => {
          submitting -= 1;
          poke();
        });
      break;
    case 'cancel':
      target.cancel(message.id, message.reason);
      break;
    case 'drain':
      draining = true;
      break;
  }
  poke();
}

function poke(): void {
  const resolve = wake;
  wake = undefined;
  resolve?.();
}

function send(events: SequenceEvent[], target: StepLoop): void {
  if (events.length > 0) post({ kind: 'events', events, stats: target.stats() });
}

async function run(target: StepLoop): Promise<void> {
  for (;;) {
    if (target.idle && submitting === 0) {
      if (draining) {
        // What the loop holds on the device goes before the thread may be ended.
        await target.close?.();
        post({ kind: 'drained' });
        port?.close();
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
      continue;
    }
    send(await target.step(), target);
    // Lets submits and cancels that arrived during the step in before the next one.
    await nextTurn();
  }
}

try {
  const store = new ModelStore({ sharing: setup.sharing });
  const { path, onnxFile, variant } = setup.model;
  await checkModelFits(path, setup.task, (await loadTask(setup.task)).needs, path, {
    onnxFile,
    variant,
  });
  const model = await store.load(setup.model);
  loop = await createLoop(model, setup);
  // Every module this thread needs is loaded: written now, the next thread finds it compiled.
  flushCompileCache();
  post({ kind: 'ready' });
  for (const message of early.splice(0)) handle(loop, message);
  await run(loop);
  await store.close();
} catch (err) {
  post({ kind: 'fatal', error: serializeError(err) });
  // The open port would keep a thread that has no loop alive forever, and an abort waiting for
  // 'drained' with it: closing lets the thread exit, which the main side takes as drained.
  port.close();
}
