// Headers kept as they came (bytes, repeated names) on their way to sinks that can only hold
// text: JSON envelopes (file and BullMQ dead letters) and Redis stream fields.
import type { HeaderValue, Headers } from './record.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Every (name, value) pair in order, a repeated name once per value. */
export function headerPairs(headers: Headers): [string, HeaderValue][] {
  const pairs: [string, HeaderValue][] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (Array.isArray(value)) for (const v of value) pairs.push([name, v]);
    else pairs.push([name, value]);
  }
  return pairs;
}

/** The value as text, or undefined when its bytes are not UTF-8. */
export function headerText(value: HeaderValue): string | undefined {
  if (typeof value === 'string') return value;
  try {
    return utf8.decode(value);
  } catch {
    return undefined;
  }
}

/**
 * Headers for a JSON envelope: `headers` holds the values that are text (an array for a
 * repeated name), `headersBase64` the names with a value that is not UTF-8, every value of that
 * name in base64, so no byte is lost and a text header reads as it always did.
 */
export function envelopeHeaders(headers: Headers): {
  headers: Record<string, string | string[]>;
  headersBase64?: Record<string, string | string[]>;
} {
  const text: Record<string, string | string[]> = {};
  const binary: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const values = Array.isArray(value) ? value : [value];
    const texts = values.map(headerText);
    if (texts.every((t): t is string => t !== undefined)) {
      text[name] = Array.isArray(value) ? texts : (texts[0] as string);
    } else {
      const encoded = values.map((v) => Buffer.from(v).toString('base64'));
      binary[name] = Array.isArray(value) ? encoded : (encoded[0] as string);
    }
  }
  return Object.keys(binary).length > 0
    ? { headers: text, headersBase64: binary }
    : { headers: text };
}
