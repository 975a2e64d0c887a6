#!/usr/bin/env node
// The installed command. It is JavaScript, not TypeScript, so that it can turn on Node's compile
// cache before the first .ts file loads: with the cache warm, this process never loads Node's
// type stripper (src/shards/compile-cache.ts says what that saves). NODE_COMPILE_CACHE is set
// for the inference threads and child processes, so they share one cache.
import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

// glibc gives each thread that allocates an arena of its own (up to 8 per core), and each arena
// keeps what was freed in it: with Node's, libuv's and the inference threads, a CPU shard peaked
// ~10 MiB higher than with two arenas, for the same records/s (docs/performance.md, "The C
// heap's arenas"). glibc reads the cap when the process starts, before any JavaScript, so the
// process starts again once with it set: execve keeps its id, its signals and its stdio. A
// MALLOC_ARENA_MAX already set (any value) is the operator's, and is left alone.
if (
  process.platform === 'linux' &&
  process.env.MALLOC_ARENA_MAX === undefined &&
  typeof process.execve === 'function'
) {
  try {
    process.execve(
      process.execPath,
      [process.execPath, ...process.execArgv, ...process.argv.slice(1)],
      {
        ...process.env,
        MALLOC_ARENA_MAX: '2',
      },
    );
  } catch {
    // Not allowed here (a sandbox refusing execve): run on with glibc's default arenas.
  }
}

if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  process.env.NODE_COMPILE_CACHE ||= join(tmpdir(), 'node-compile-cache');
  enableCompileCache(process.env.NODE_COMPILE_CACHE);
}
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
