// Node runs our TypeScript by stripping its types with a WebAssembly module that every isolate
// loads on its first .ts file: ~17 MiB of each inference thread's memory, ~27 MiB with the parse
// of our modules (measured on Node 24.21, docs/performance.md). Node's compile cache keeps the
// stripped and compiled sources on disk, keyed by each file's content, so an isolate that finds
// them there never loads the stripper. Inference threads get it by default, whether or not the
// process that starts them turned it on (bin/hugot-stream.js does); NODE_DISABLE_COMPILE_CACHE=1,
// Node's own switch, turns it off.
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Node's enableCompileCache() puts the cache when neither a directory nor the variable says. */
export const DEFAULT_COMPILE_CACHE = join(tmpdir(), 'node-compile-cache');

/**
 * The environment a thread starts with so that it uses the compile cache: `env` with
 * NODE_COMPILE_CACHE kept where set, else Node's default directory. Undefined (the thread
 * inherits `env` as it is) where NODE_DISABLE_COMPILE_CACHE is set. The variable names the
 * cache's root (Node adds a folder per Node version), which is why a process's
 * module.getCompileCacheDir() is not passed on.
 */
export function compileCacheEnv(
  env: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv | undefined {
  if (isSet(env.NODE_DISABLE_COMPILE_CACHE)) return undefined;
  return {
    ...env,
    NODE_COMPILE_CACHE: isSet(env.NODE_COMPILE_CACHE)
      ? env.NODE_COMPILE_CACHE
      : DEFAULT_COMPILE_CACHE,
  };
}

function isSet(value: string | undefined): value is string {
  return value !== undefined && value !== '';
}
