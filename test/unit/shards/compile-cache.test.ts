import { describe, expect, it } from 'vitest';
import { compileCacheEnv, DEFAULT_COMPILE_CACHE } from '../../../src/shards/compile-cache.ts';

describe('compileCacheEnv', () => {
  it("keeps the process's own NODE_COMPILE_CACHE and the rest of its environment", () => {
    expect(compileCacheEnv({ NODE_COMPILE_CACHE: '/var/cache/hugot', HOME: '/home/u' })).toEqual({
      NODE_COMPILE_CACHE: '/var/cache/hugot',
      HOME: '/home/u',
    });
  });

  it("falls back to Node's default directory where the variable is unset or empty", () => {
    expect(compileCacheEnv({})?.NODE_COMPILE_CACHE).toBe(DEFAULT_COMPILE_CACHE);
    expect(compileCacheEnv({ NODE_COMPILE_CACHE: '' })?.NODE_COMPILE_CACHE).toBe(
      DEFAULT_COMPILE_CACHE,
    );
  });

  it("leaves the environment alone where Node's own switch turns the cache off", () => {
    expect(
      compileCacheEnv({ NODE_DISABLE_COMPILE_CACHE: '1', NODE_COMPILE_CACHE: '/x' }),
    ).toBeUndefined();
  });
});
