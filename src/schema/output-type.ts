// The type of a route's output field, learned from the results themselves: a vector is an array
// of float (or `bytes`, a compact vector's raw bytes: src/schema/vector-bytes.ts), a label or an
// entity a record of its keys, a list of them an array of that record.
// Every record field is optional (a union with null, default null), so that a result with a key
// the first did not have widens the type compatibly; an empty list's items are an empty record
// until a result shows what they hold. Types that cannot be reconciled (a text where a number
// was) refuse the output.
import { SchemaRefusedError } from '../errors.ts';

export type OutputType =
  | { kind: 'floats' }
  /** Raw bytes: Avro `bytes`, Protobuf `bytes`, base64 text in JSON Schema. */
  | { kind: 'bytes' }
  | { kind: 'array'; items: OutputType }
  | { kind: 'record'; fields: [string, OutputType][] }
  | { kind: 'string' }
  | { kind: 'double' }
  | { kind: 'boolean' }
  /** Seen only as null so far, or an empty list's items. */
  | { kind: 'unknown' };

export function typeOf(value: unknown, at = 'output'): OutputType {
  if (value === null || value === undefined) return { kind: 'unknown' };
  if (typeof value === 'string') return { kind: 'string' };
  if (typeof value === 'number') return { kind: 'double' };
  if (typeof value === 'boolean') return { kind: 'boolean' };
  if (value instanceof Uint8Array) return { kind: 'bytes' };
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every((v) => typeof v === 'number')) return { kind: 'floats' };
    let items: OutputType = { kind: 'unknown' };
    for (const [i, item] of value.entries()) items = widen(items, typeOf(item, `${at}.${i}`), at);
    return { kind: 'array', items };
  }
  if (typeof value === 'object') {
    const fields: [string, OutputType][] = [];
    for (const [key, v] of Object.entries(value as Record<string, unknown>))
      fields.push([key, typeOf(v, `${at}.${key}`)]);
    return { kind: 'record', fields };
  }
  throw new SchemaRefusedError(`${at} is a ${typeof value}, which no output schema holds`);
}

/** The type that holds values of both; SchemaRefusedError when none does. */
export function widen(a: OutputType, b: OutputType, at = 'output'): OutputType {
  if (a.kind === 'unknown') return b;
  if (b.kind === 'unknown') return a;
  // An empty list met a vector, or the other way round: it is a vector.
  if (a.kind === 'floats' && b.kind === 'array' && b.items.kind === 'unknown') return a;
  if (b.kind === 'floats' && a.kind === 'array' && a.items.kind === 'unknown') return b;
  if (a.kind !== b.kind)
    throw new SchemaRefusedError(
      `${at} was ${describeType(a)} in an earlier output and is ${describeType(b)} now; one output schema cannot hold both`,
    );
  if (a.kind === 'array' && b.kind === 'array')
    return { kind: 'array', items: widen(a.items, b.items, `${at}[]`) };
  if (a.kind === 'record' && b.kind === 'record') {
    const fields = new Map(a.fields);
    for (const [key, type] of b.fields)
      fields.set(key, widen(fields.get(key) ?? { kind: 'unknown' }, type, `${at}.${key}`));
    // The earlier fields keep their places (Protobuf field numbers follow them).
    return { kind: 'record', fields: [...fields.entries()] };
  }
  return a;
}

export function sameType(a: OutputType, b: OutputType): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function describeType(type: OutputType): string {
  switch (type.kind) {
    case 'floats':
      return 'a vector';
    case 'array':
      return 'a list';
    case 'record':
      return 'an object';
    case 'double':
      return 'a number';
    case 'bytes':
      return 'bytes';
    default:
      return `a ${type.kind}`;
  }
}
