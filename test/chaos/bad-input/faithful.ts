// What "processed faithfully" means for a merged output: the input's bytes, unchanged, with one
// insertion that holds the output field. Found by the longest common prefix and suffix, so it
// holds whatever the formatting, key order or number spelling of the input.
import type { IHeaders } from 'kafkajs';

export function insertionOnly(input: Buffer, output: Buffer, field: string): string | undefined {
  let prefix = 0;
  while (prefix < input.length && prefix < output.length && input[prefix] === output[prefix])
    prefix += 1;
  let suffix = 0;
  const room = Math.min(input.length, output.length) - prefix;
  while (suffix < room && input[input.length - 1 - suffix] === output[output.length - 1 - suffix])
    suffix += 1;
  if (prefix + suffix < input.length) {
    const at = prefix;
    return `bytes outside "${field}" changed at byte ${at}: input ${JSON.stringify(input.subarray(at, at + 40).toString('latin1'))}, output ${JSON.stringify(output.subarray(at, at + 40).toString('latin1'))}`;
  }
  const inserted = output.subarray(prefix, output.length - suffix).toString('utf8');
  if (!inserted.includes(`"${field}"`))
    return `the bytes added to the record do not hold "${field}": ${inserted.slice(0, 80)}`;
  return undefined;
}

/** Header values as byte lists, a repeated header keeping every value in order. */
export function headerBytes(headers: IHeaders | undefined): Map<string, Buffer[]> {
  const out = new Map<string, Buffer[]>();
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (value === undefined) continue;
    const list = Array.isArray(value) ? value : [value];
    out.set(
      name,
      list.map((v) => (Buffer.isBuffer(v) ? v : Buffer.from(v))),
    );
  }
  return out;
}

/** Every input header is on the output with the same bytes and the same repeats. */
export function headersKept(
  input: IHeaders | undefined,
  output: IHeaders | undefined,
): string | undefined {
  const got = headerBytes(output);
  for (const [name, values] of headerBytes(input)) {
    const seen = got.get(name);
    if (seen === undefined) return `header ${name} is missing`;
    if (seen.length !== values.length)
      return `header ${name} had ${values.length} values, has ${seen.length}`;
    for (let i = 0; i < values.length; i += 1)
      if (!(values[i] ?? Buffer.alloc(0)).equals(seen[i] ?? Buffer.alloc(0)))
        return `header ${name}[${i}] bytes changed`;
  }
  return undefined;
}
