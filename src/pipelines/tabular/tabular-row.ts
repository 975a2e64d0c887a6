// One row of features, as a record or a library call gives it: an array of numbers in the model's
// feature order, or an object keyed by feature name. The shape (numbers, finite, not empty) can be
// checked without the model, so a route refuses a malformed row before it joins a batch; the
// count and the names need the model and are checked by the pipeline.
import { InputError } from '../../errors.ts';
import { didYouMean } from '../../options/suggest.ts';
import { isObject } from '../task-definition.ts';
import type { TabularInput } from './tabular-model.ts';

export type TabularRow = readonly number[] | Readonly<Record<string, number>>;

export const ROW_SHAPE = 'a row: an array of numbers, or an object of feature name -> number';

/**
 * What is wrong with the row's shape, or undefined when it is a row. `at` names the input in the
 * message. JSON has no NaN, but `1e400` parses to Infinity, and a library caller can pass NaN.
 */
export function rowShapeProblem(row: unknown, at: string): string | undefined {
  let entries: [string, unknown][];
  if (Array.isArray(row)) entries = row.map((v, i) => [`${at}[${i}]`, v]);
  else if (isObject(row)) entries = Object.entries(row).map(([k, v]) => [keyPath(at, k), v]);
  else return `${at} must be ${ROW_SHAPE}`;
  if (entries.length === 0) return `${at} is empty; it must hold the model's features`;
  for (const [where, value] of entries) {
    if (typeof value !== 'number')
      return `${where} must be a number, got ${value === null ? 'null' : typeof value}`;
    if (!Number.isFinite(value)) return `${where} must be a finite number, got ${value}`;
  }
  return undefined;
}

/**
 * The row's values in the model's feature order; otherwise an InputError for field `at`, its
 * message led by the task's name as every pipeline's are.
 */
export function rowValues(
  row: unknown,
  input: TabularInput,
  at: string,
  task: string,
): readonly number[] {
  const fail = (message: string): never => {
    throw new InputError(`${task}: ${message}`, { field: at });
  };
  const problem = rowShapeProblem(row, at);
  if (problem !== undefined) return fail(problem);
  if (Array.isArray(row)) {
    if (row.length !== input.width)
      return fail(
        `${at} has ${row.length} values; the model takes ${input.width} features` +
          (input.featureNames === undefined ? '' : ` (${list(input.featureNames)})`),
      );
    return row as number[];
  }
  const record = row as Record<string, number>;
  const names = input.featureNames;
  if (names === undefined)
    return fail(
      `${at} is an object, but the model's config.json names no features (feature_names); ` +
        `pass the row as an array of ${input.width} numbers`,
    );
  const known = new Set(names);
  const unknown = Object.keys(record).filter((k) => !known.has(k));
  const [first] = unknown;
  if (first !== undefined)
    return fail(
      `${at} has ${unknown.length === 1 ? 'a key' : 'keys'} the model does not know: ` +
        `${list(unknown)}${didYouMean(first, names)}`,
    );
  const missing = names.filter((n) => !Object.hasOwn(record, n));
  if (missing.length > 0)
    return fail(`${at} lacks feature${missing.length === 1 ? '' : 's'} ${list(missing)}`);
  return names.map((n) => record[n] as number);
}

/** `at.name` for a plain name, `at["sepal width (cm)"]` for any other. */
function keyPath(at: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${at}.${key}` : `${at}[${JSON.stringify(key)}]`;
}

/** Names quoted, the first eight of a long list. */
function list(names: readonly string[]): string {
  const shown = names.slice(0, 8).map((n) => `'${n}'`);
  return names.length > 8 ? `${shown.join(', ')} and ${names.length - 8} more` : shown.join(', ');
}
