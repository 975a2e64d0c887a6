#!/usr/bin/env node
// The installed command. It is JavaScript, not TypeScript, so that it can turn on Node's compile
// cache before the first .ts file loads: with the cache warm, this process never loads Node's
// type stripper (src/shards/compile-cache.ts says what that saves). NODE_COMPILE_CACHE is set
// for the inference threads and child processes, so they share one cache.
import { enableCompileCache } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import process from 'node:process';

if (!process.env.NODE_DISABLE_COMPILE_CACHE) {
  process.env.NODE_COMPILE_CACHE ||= join(tmpdir(), 'node-compile-cache');
  enableCompileCache(process.env.NODE_COMPILE_CACHE);
}
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
