// Structural comparison of our output with Python's: numbers within a tolerance, everything else
// exactly. Returns the differences (empty when equal) and the largest numeric deviation seen.
export interface Comparison {
  differences: string[];
  maxAbsDiff: number;
}

export function compareDeep(actual: unknown, expected: unknown, tolerance = 1e-4): Comparison {
  const result: Comparison = { differences: [], maxAbsDiff: 0 };
  walk(actual, expected, '$', tolerance, result);
  return result;
}

function walk(
  actual: unknown,
  expected: unknown,
  path: string,
  tolerance: number,
  out: Comparison,
): void {
  if (out.differences.length > 20) return;
  if (typeof expected === 'number' && typeof actual === 'number') {
    const diff = Math.abs(actual - expected);
    out.maxAbsDiff = Math.max(out.maxAbsDiff, diff);
    if (!(diff <= tolerance))
      out.differences.push(`${path}: ${actual} vs expected ${expected} (|diff| ${diff})`);
    return;
  }
  if (ArrayBuffer.isView(actual) && !(actual instanceof DataView)) {
    walk(Array.from(actual as unknown as ArrayLike<number>), expected, path, tolerance, out);
    return;
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) {
      out.differences.push(
        `${path}: expected an array of ${expected.length}, got ${describe(actual)}`,
      );
      return;
    }
    if (actual.length !== expected.length) {
      out.differences.push(`${path}: length ${actual.length} vs expected ${expected.length}`);
    }
    for (let i = 0; i < Math.min(actual.length, expected.length); i += 1) {
      walk(actual[i], expected[i], `${path}[${i}]`, tolerance, out);
    }
    return;
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') {
      out.differences.push(`${path}: expected an object, got ${describe(actual)}`);
      return;
    }
    const a = actual as Record<string, unknown>;
    const e = expected as Record<string, unknown>;
    for (const key of new Set([...Object.keys(e), ...Object.keys(a)])) {
      if (!(key in a))
        out.differences.push(`${path}.${key}: missing (expected ${JSON.stringify(e[key])})`);
      else if (!(key in e))
        out.differences.push(`${path}.${key}: unexpected ${JSON.stringify(a[key])}`);
      else walk(a[key], e[key], `${path}.${key}`, tolerance, out);
    }
    return;
  }
  if (actual !== expected)
    out.differences.push(
      `${path}: ${JSON.stringify(actual)} vs expected ${JSON.stringify(expected)}`,
    );
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  return typeof value;
}
