// Schemas declared lazily (src/options/lazy-schema.ts) and options compiled once on the main
// thread (src/options/compiled.ts): what keeps zod out of the inference threads.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../../src/errors.ts';
import { isCompiled, markCompiled } from '../../../src/options/compiled.ts';
import { lazySchema, loadZod } from '../../../src/options/lazy-schema.ts';
import { parseOptions } from '../../../src/options/parse.ts';

function counted() {
  let builds = 0;
  const options = lazySchema((zod) => {
    builds += 1;
    return zod.object({ topK: zod.number().int().min(1).default(3) }).strict();
  });
  return { options, builds: () => builds };
}

describe('lazySchema', () => {
  it('loads the very zod that `import` gives, so lazy and eager schemas compose', () => {
    expect(loadZod()).toBe(z);
    const { options } = counted();
    const outer = z.object({ inner: options.schema });
    expect(outer.parse({ inner: {} })).toEqual({ inner: { topK: 3 } });
  });

  it('builds its schema on the first read, once', () => {
    const { options, builds } = counted();
    expect(builds()).toBe(0);
    const first = options.schema;
    expect(options.schema).toBe(first);
    expect(builds()).toBe(1);
  });
});

describe('parseOptions', () => {
  it('fills defaults and names the field of a bad value', () => {
    const { options } = counted();
    expect(parseOptions(options, {}, 'options')).toEqual({ topK: 3 });
    const refused = (() => {
      try {
        return parseOptions(options, { topK: 0 }, 'pipelines.p.options');
      } catch (err) {
        return err;
      }
    })();
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).field).toBe('pipelines.p.options.topK');
  });

  it('returns options marked compiled as they are, without building the schema', () => {
    const { options, builds } = counted();
    // Not what the schema would give: proof that nothing parsed it.
    const compiled = markCompiled({ topK: 0 });
    expect(parseOptions(options, compiled, 'options')).toBe(compiled);
    expect(builds()).toBe(0);
  });

  it('parses a copy of compiled options again: spreading drops the mark', () => {
    const compiled = markCompiled({ topK: 2 });
    expect(isCompiled(compiled)).toBe(true);
    expect(Object.keys(compiled)).toEqual(['topK']);
    const copy = { ...compiled };
    expect(isCompiled(copy)).toBe(false);
    const { options, builds } = counted();
    expect(parseOptions(options, copy, 'options')).toEqual({ topK: 2 });
    expect(builds()).toBe(1);
  });

  it('leaves values that cannot carry a mark unmarked', () => {
    expect(isCompiled(markCompiled(undefined))).toBe(false);
    expect(isCompiled(markCompiled(3))).toBe(false);
  });
});
