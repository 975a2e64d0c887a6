// Options the main thread has already validated and filled with their defaults. A shard hands its
// threads the compiled form (plain data, which survives the thread boundary); the thread marks it
// on arrival, and the parse helpers return a marked value as it is instead of parsing it again,
// which would load zod into the thread (src/options/lazy-schema.ts). The mark is a
// non-enumerable symbol: a copy made by spreading loses it and is parsed, which is always safe.
const COMPILED = Symbol('hugot.compiledOptions');

/** `value`, marked as compiled options (the same object). */
export function markCompiled<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.hasOwn(value, COMPILED))
    Object.defineProperty(value, COMPILED, { value: true, enumerable: false });
  return value;
}

export function isCompiled(value: unknown): boolean {
  return value !== null && typeof value === 'object' && Object.hasOwn(value, COMPILED);
}
