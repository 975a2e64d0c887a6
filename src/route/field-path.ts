// Dotted paths into JSON records ("payload.text", "items.0.body"); "$" is the whole record.
import { InputError } from '../errors.ts';

export function getPath(value: unknown, path: string): unknown {
  if (path === '$') return value;
  let current: unknown = value;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

/** Sets `path` inside a JSON object, creating intermediate objects; the record must be an object. */
export function setPath(target: unknown, path: string, value: unknown): void {
  if (target === null || typeof target !== 'object' || Array.isArray(target)) {
    throw new InputError(`cannot add the result at '${path}': the record is not a JSON object`, {
      field: path,
    });
  }
  const parts = path.split('.');
  let current = target as Record<string, unknown>;
  for (const part of parts.slice(0, -1)) {
    const next = current[part];
    if (next === null || typeof next !== 'object') current[part] = {};
    current = current[part] as Record<string, unknown>;
  }
  current[parts[parts.length - 1] as string] = value;
}
