// A table question as a record carries it: `{table, query}`. The table comes as Python's pipeline
// takes it, a dict of columns ({"Stars": ["36542", "4512"], ...}, the form pandas.DataFrame(dict)
// reads), or as rows with the header first ([["Repository", "Stars"], ["Transformers", "36542"]]).
// Every header and cell is a string (TapasTokenizer tokenizes each and the answer joins them; numbers
// are read out of the text), every column as long as the others, the query a non-empty string or a
// non-empty list of them (one answer per query, as Python returns for a list).
import { InputError } from '../../errors.ts';
import { isObject } from '../task-definition.ts';

export interface Table {
  header: string[];
  /** rows[r][c]: the cells under the header, row by row. */
  rows: string[][];
}

export interface TableQuestion {
  table: Table;
  queries: string[];
  /** Whether the query came as a list (the answer is then a list too). */
  many: boolean;
}

export const TABLE_SHAPE =
  '{table, query}: the table as {column: [cells]} or [[header...], [row...]...] of strings, the query a string or a list of strings';

const fail = (field: string, message: string): never => {
  throw new InputError(`${field} ${message}`, { field });
};

const describe = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value;

function fromColumns(columns: Record<string, unknown>, field: string): Table {
  const header = Object.keys(columns);
  if (header.length === 0) fail(field, 'has no columns');
  let height: number | undefined;
  const cells = header.map((name) => {
    const column = columns[name];
    const at = `${field}[${JSON.stringify(name)}]`;
    if (!Array.isArray(column)) return fail(at, `must be a list of cells, got ${describe(column)}`);
    if (height !== undefined && column.length !== height)
      fail(at, `has ${column.length} cells where the columns before it have ${height}`);
    height = column.length;
    column.forEach((cell: unknown, r) => {
      if (typeof cell !== 'string') fail(`${at}[${r}]`, `must be a string, got ${describe(cell)}`);
    });
    return column as string[];
  });
  const rows = Array.from({ length: height ?? 0 }, (_, r) =>
    cells.map((column) => column[r] as string),
  );
  return { header, rows };
}

function fromRows(lines: unknown[], field: string): Table {
  const [first, ...rest] = lines;
  if (!Array.isArray(first))
    return fail(`${field}[0]`, 'must be the header: a list of column names');
  first.forEach((name: unknown, c) => {
    if (typeof name !== 'string')
      fail(`${field}[0][${c}]`, `must be a column name (a string), got ${describe(name)}`);
  });
  if (first.length === 0) fail(`${field}[0]`, 'has no columns');
  const rows = rest.map((line, i) => {
    const at = `${field}[${i + 1}]`;
    if (!Array.isArray(line))
      return fail(at, `must be a row (a list of cells), got ${describe(line)}`);
    if (line.length !== first.length)
      fail(at, `has ${line.length} cells; the header has ${first.length} columns`);
    line.forEach((cell: unknown, c) => {
      if (typeof cell !== 'string') fail(`${at}[${c}]`, `must be a string, got ${describe(cell)}`);
    });
    return line as string[];
  });
  return { header: first as string[], rows };
}

/** `{table, query}` checked and in one shape; an InputError names the field and what is wrong. */
export function toTableQuestion(input: unknown, field: string): TableQuestion {
  if (!isObject(input)) return fail(field, `must be ${TABLE_SHAPE}, got ${describe(input)}`);
  const { table, query } = input;
  if (query === undefined || query === null)
    fail(`${field}.query`, 'is missing: the question to answer from the table');
  const queries = typeof query === 'string' ? [query] : query;
  if (!Array.isArray(queries) || queries.length === 0)
    return fail(
      `${field}.query`,
      `must be a string or a non-empty list of strings, got ${describe(query)}`,
    );
  queries.forEach((q: unknown, i) => {
    const at = Array.isArray(query) ? `${field}.query[${i}]` : `${field}.query`;
    if (typeof q !== 'string') fail(at, `must be a string, got ${describe(q)}`);
    if (q === '') fail(at, 'is empty');
  });
  if (table === undefined || table === null) fail(`${field}.table`, 'is missing');
  const parsed = Array.isArray(table)
    ? fromRows(table, `${field}.table`)
    : isObject(table)
      ? fromColumns(table, `${field}.table`)
      : fail(
          `${field}.table`,
          `must be {column: [cells]} or [[header...], [row...]...], got ${describe(table)}`,
        );
  // Python's pipeline refuses an empty DataFrame (no rows) before tokenizing.
  if (parsed.rows.length === 0) fail(`${field}.table`, 'has no rows');
  return { table: parsed, queries: queries as string[], many: Array.isArray(query) };
}
