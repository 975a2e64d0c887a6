// zod schemas built on first use. zod costs every isolate that loads it several MiB of resident
// memory (docs/performance.md, "What a thread loads"), and an inference thread that is handed
// options the main thread already compiled never parses anything: so no module a thread loads
// imports zod's values at the top. A schema is declared with `lazySchema` and built, with zod
// loaded then, the first time `.schema` is read.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type * as Zod from 'zod';

const requireModule = createRequire(import.meta.url);
let zod: typeof Zod | undefined;

/**
 * zod's namespace, loaded now if no module has yet. `require` of an ES module file shares the ES
 * module cache, so this is the very instance `import { z } from 'zod'` gives elsewhere (two
 * copies of zod would not compose each other's schemas).
 */
export function loadZod(): typeof Zod.z {
  zod ??= requireModule(fileURLToPath(import.meta.resolve('zod'))) as typeof Zod;
  return zod.z;
}

export interface LazySchema<S extends Zod.ZodType> {
  /** The schema, built (and zod loaded) the first time it is read. */
  readonly schema: S;
}

export function lazySchema<S extends Zod.ZodType>(build: (z: typeof Zod.z) => S): LazySchema<S> {
  let built: S | undefined;
  return {
    get schema(): S {
      built ??= build(loadZod());
      return built;
    },
  };
}

/** A schema built already (its module imports zod anyway), where a LazySchema is asked for. */
export function readySchema<S extends Zod.ZodType>(schema: S): LazySchema<S> {
  return { schema };
}
