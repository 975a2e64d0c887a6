// piscina requires a task file before it imports it; the threads' entry must be refused by
// require() (its top-level await), so that no thread module is loaded through require(esm), whose
// facade aborts the process when the thread is terminated while it is built (thread-entry.ts).
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const ENTRY = join(ROOT, 'src', 'shards', 'thread-entry.ts');
const HANDLER = join(ROOT, 'test', 'fixtures', 'workers', 'scripted-worker.ts');

// What piscina's worker does with a task file (node_modules/piscina/dist/worker.js, getHandler).
const PROBE = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');
let required;
try { require(workerData.entry); required = 'loaded'; } catch (err) { required = err.code; }
import(pathToFileURL(workerData.entry).href).then(
  (module) => parentPort.postMessage({ required, imported: typeof module.default }),
  (err) => parentPort.postMessage({ required, imported: String(err) }),
);
`;

describe('the inference threads entry', () => {
  it('is refused by require() and imports its handler', async () => {
    const worker = new Worker(PROBE, {
      eval: true,
      workerData: { entry: ENTRY, handlerFile: HANDLER },
    });
    try {
      const reply = await new Promise<unknown>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      expect(reply).toEqual({ required: 'ERR_REQUIRE_ASYNC_MODULE', imported: 'function' });
    } finally {
      await worker.terminate();
    }
  });
});
