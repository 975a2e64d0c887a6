// A worker thread of the transformers.js contender: one pipeline (tjs-runner.ts), fed one batch
// of texts at a time by tjs-thread.ts. Replies: 'ready' once loaded, {outputs} per batch,
// {error} for a batch that failed, 'closed' after the pipeline was disposed.
import { parentPort, workerData } from 'node:worker_threads';
import { tjsRunner, type TjsSetup } from './tjs-runner.ts';

const port = parentPort;
if (port === null) throw new Error('tjs-worker must run as a worker thread');
const runner = await tjsRunner(workerData as TjsSetup);
port.on('message', (message: { texts: string[] } | 'close') => {
  if (message === 'close') {
    void runner.close().finally(() => port.postMessage('closed'));
    return;
  }
  runner
    .run(message.texts)
    .then((outputs) => port.postMessage({ outputs }))
    .catch((err: unknown) => port.postMessage({ error: String(err) }));
});
port.postMessage('ready');
