// A CommonJS package loaded the first time it is used instead of when its importer loads: an
// inference thread that never takes the path that needs it never pays for it (each package costs
// every isolate that loads it a few MiB; docs/performance.md, "What a thread loads"). `require`
// shares the CommonJS cache with `import`, so every caller gets the one instance.
import { createRequire } from 'node:module';

const requireModule = createRequire(import.meta.url);

/** `load()` returns the package `name`, required on the first call. */
export function lazyModule<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => {
    loaded ??= requireModule(name) as T;
    return loaded;
  };
}
