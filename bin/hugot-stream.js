#!/usr/bin/env node
// The installed command. It is JavaScript, not TypeScript, so that it can turn on Node's compile
// cache before the first .ts file loads: with the cache warm, this process never loads Node's
// type stripper (src/shards/compile-cache.ts says what that saves). NODE_COMPILE_CACHE is set
// for the inference threads and child processes, so they share one cache.
import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';
import { restartWith } from './worker-process.js';

// Settings that only take effect when a process starts (bin/worker-process.js): the process
// starts again once with those it lacks. execve keeps its id, its signals and its stdio.
const restart =
  process.platform === 'linux' ? restartWith(process.env, process.execArgv) : undefined;
if (restart !== undefined && typeof process.execve === 'function') {
  try {
    process.execve(
      process.execPath,
      [process.execPath, ...restart.execArgv, ...process.argv.slice(1)],
      restart.env,
    );
  } catch {
    // Not allowed here (a sandbox refusing execve): run on with Node's and glibc's defaults.
  }
}

if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  process.env.NODE_COMPILE_CACHE ||= join(tmpdir(), 'node-compile-cache');
  enableCompileCache(process.env.NODE_COMPILE_CACHE);
}
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
