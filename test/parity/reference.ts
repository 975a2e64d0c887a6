// A reference output's identity for the parity report: the same Python numbers checked by two
// tests (one golden file copied for a second export of the same weights, an alias's pipeline
// fed its task's goldens) are one reference proven, not two. The identity is the content, so
// two goldens are one exactly when their call and expected output are the same.
import { createHash } from 'node:crypto';

/** JSON with object keys sorted, so that key order in a golden file does not split a reference. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** A short content hash of the given parts (a golden's call and output, a tokenizer file). */
export function referenceOf(...parts: unknown[]): string {
  return createHash('sha256').update(canonical(parts)).digest('hex').slice(0, 16);
}
