// The file piscina starts every inference thread with; it imports the thread's handler
// (workerData.handlerFile: inference-worker.ts, or a test's scripted worker) and exports it.
//
// piscina loads a task file with require() first and falls back to import(). On Node 24,
// require() of an ES module builds a CommonJS facade for it, and a thread terminated while that
// facade is being built fails a native assertion that aborts the whole process
// (`ModuleWrap::CreateRequiredModuleFacade`, "facade->InstantiateModule(...) .IsJust()"). A shard
// closed while piscina was starting a replacement for a thread that died did exactly that: a
// vitest fork ended under a test that crashes threads, and a loop of such cycles aborted with that
// stack about once in 450 close-after-crash cycles on a busy machine. The top-level await below
// makes require() refuse this file (ERR_REQUIRE_ASYNC_MODULE) before any facade exists, so piscina
// imports it, and nothing in a thread is ever loaded through require(esm).
import { pathToFileURL } from 'node:url';
import { workerData } from 'node:worker_threads';

const { handlerFile } = workerData as { handlerFile: string };
const handler = (await import(pathToFileURL(handlerFile).href)) as { default: unknown };

export default handler.default;
