// The numbers and dates TAPAS reads in a table and a question, as TapasTokenizer finds them (its
// parse_text and the number annotation of the original TAPAS code): every number and date span of
// a text, longest spans first, each cell of a column reduced to the one value type most cells share
// (the "consolidation"), and the sort keys that rank a column and compare it with the question.
//
// Texts are first normalised as Python's normalize_for_match does (lower case, runs of white space
// to one space). Python's regular expressions are Unicode-aware (\d any decimal digit, \w any letter
// or number), so these use \p{Nd} and [\p{L}\p{N}_]; span positions are counted in code points as
// Python counts them.

export interface DateValue {
  year: number | undefined;
  month: number | undefined;
  day: number | undefined;
}

/** A number or a (partial) date; exactly one of the two is set. */
export type NumericValue = { kind: 'number'; value: number } | { kind: 'date'; date: DateValue };

export interface NumericSpan {
  begin: number;
  end: number;
  values: NumericValue[];
}

const NUMBER_WORDS = [
  'zero',
  'one',
  'two',
  'three',
  'four',
  'five',
  'six',
  'seven',
  'eight',
  'nine',
  'ten',
  'eleven',
  'twelve',
];
const ORDINAL_WORDS = [
  'zeroth',
  'first',
  'second',
  'third',
  'fourth',
  'fifth',
  'sixth',
  'seventh',
  'eighth',
  'ninth',
  'tenth',
  'eleventh',
  'twelfth',
];
const ORDINAL_SUFFIXES = ['st', 'nd', 'rd', 'th'];
const MIN_YEAR = 1700;
const MAX_YEAR = 2016;
const MAX_DATE_NGRAM = 5;

// Python's str.split() white space (as in word-boxes.ts): what normalize_for_match collapses.
const SPACE = String.raw`[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]`;
const NUMBER_PATTERN = new RegExp(
  String.raw`((^|${SPACE})[+-])?((\.\p{Nd}+)|(\p{Nd}+(,\p{Nd}\p{Nd}\p{Nd})*(\.\p{Nd}*)?))`,
  'gu',
);
const ALNUM = /^[\p{L}\p{N}]$/u;
const DECIMAL_DIGIT = /^\p{Nd}$/u;

/** Python's `" ".join(text.lower().split())`. */
export function normalizeForMatch(text: string): string {
  return text
    .toLowerCase()
    .split(new RegExp(`${SPACE}+`, 'u'))
    .filter((word) => word !== '')
    .join(' ');
}

/** A decimal digit's value: Unicode lays every decimal digit out in runs that start at a zero. */
function digitValue(char: string): number {
  let code = char.codePointAt(0) as number;
  let value = 0;
  while (DECIMAL_DIGIT.test(String.fromCodePoint(code - 1)) && value < 9) {
    code -= 1;
    value += 1;
  }
  return value;
}

/** Every decimal digit as its ASCII digit, so JavaScript's number parsing reads what Python's float() reads. */
function asciiDigits(text: string): string {
  let out = '';
  for (const char of text) out += DECIMAL_DIGIT.test(char) ? String(digitValue(char)) : char;
  return out;
}

const PYTHON_FLOAT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/** Python's float() for what the spans can hold: decimal numbers; inf and nan never count. */
function pythonFloat(text: string): number | undefined {
  const ascii = asciiDigits(text);
  if (!PYTHON_FLOAT.test(ascii)) return undefined;
  const value = Number(ascii.trim());
  return Number.isFinite(value) ? value : undefined;
}

/** _parse_number: a cardinal, or an ordinal with its suffix ("21st"), commas ignored. */
function parseNumber(text: string): number | undefined {
  let body = text;
  const suffix = ORDINAL_SUFFIXES.find((s) => body.endsWith(s));
  if (suffix !== undefined) body = body.slice(0, -suffix.length);
  return pythonFloat(body.replaceAll(',', ''));
}

/** get_all_spans: every run of up to `maxWords` alphanumeric words, as [begin, end) in code points. */
function allSpans(chars: readonly string[], maxWords: number): [number, number][] {
  const spans: [number, number][] = [];
  const starts: number[] = [];
  const alnum = (i: number): boolean =>
    i >= 0 && i < chars.length && ALNUM.test(chars[i] as string);
  for (let i = 0; i < chars.length; i += 1) {
    if (!alnum(i)) continue;
    if (!alnum(i - 1)) starts.push(i);
    if (!alnum(i + 1)) for (const start of starts.slice(-maxWords)) spans.push([start, i + 1]);
  }
  return spans;
}

// strptime's directives, in the C locale, as Python 3.11's _strptime spells them.
const MONTHS = [
  'january',
  'february',
  'march',
  'april',
  'may',
  'june',
  'july',
  'august',
  'september',
  'october',
  'november',
  'december',
];
const WEEKDAYS = ['monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday'];
// Python sorts the names longest first so that an alternation cannot stop at a prefix.
const alternatives = (names: readonly string[]): string =>
  [...names].sort((a, b) => b.length - a.length).join('|');
const DIRECTIVES: Record<string, { prefilter: string; strptime: string }> = {
  A: { prefilter: String.raw`[\p{L}\p{N}_]+`, strptime: `(?<A>${alternatives(WEEKDAYS)})` },
  B: { prefilter: String.raw`[\p{L}\p{N}_]+`, strptime: `(?<B>${alternatives(MONTHS)})` },
  Y: { prefilter: String.raw`\p{Nd}{4}`, strptime: String.raw`(?<Y>\p{Nd}\p{Nd}\p{Nd}\p{Nd})` },
  b: {
    prefilter: String.raw`[\p{L}\p{N}_]{3}`,
    strptime: `(?<b>${alternatives(MONTHS.map((m) => m.slice(0, 3)))})`,
  },
  d: {
    prefilter: String.raw`\p{Nd}{1,2}`,
    strptime: String.raw`(?<d>3[0-1]|[1-2]\p{Nd}|0[1-9]|[1-9]| [1-9])`,
  },
  m: { prefilter: String.raw`\p{Nd}{1,2}`, strptime: String.raw`(?<m>1[0-2]|0[1-9]|[1-9])` },
};

type DateMask = readonly [year: boolean, month: boolean, day: boolean];
const YEAR: DateMask = [true, false, false];
const YEAR_MONTH: DateMask = [true, true, false];
const YEAR_MONTH_DAY: DateMask = [true, true, true];
const MONTH: DateMask = [false, true, false];
const MONTH_DAY: DateMask = [false, true, true];

// TapasTokenizer's _DATE_PATTERNS, in its order (the first that parses wins).
const DATE_PATTERNS: [string, DateMask][] = [
  ['%B', MONTH],
  ['%Y', YEAR],
  ['%Ys', YEAR],
  ['%b %Y', YEAR_MONTH],
  ['%B %Y', YEAR_MONTH],
  ['%B %d', MONTH_DAY],
  ['%b %d', MONTH_DAY],
  ['%d %b', MONTH_DAY],
  ['%d %B', MONTH_DAY],
  ['%B %d, %Y', YEAR_MONTH_DAY],
  ['%d %B %Y', YEAR_MONTH_DAY],
  ['%m-%d-%Y', YEAR_MONTH_DAY],
  ['%Y-%m-%d', YEAR_MONTH_DAY],
  ['%Y-%m', YEAR_MONTH],
  ['%B %Y', YEAR_MONTH],
  ['%d %b %Y', YEAR_MONTH_DAY],
  ['%Y-%m-%d', YEAR_MONTH_DAY],
  ['%b %d, %Y', YEAR_MONTH_DAY],
  ['%d.%m.%Y', YEAR_MONTH_DAY],
  ['%A, %b %d', MONTH_DAY],
  ['%A, %B %d', MONTH_DAY],
];

// Unicode-mode regular expressions allow escapes of syntax characters only ('-' is literal here).
const escape = (text: string): string => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function compilePattern(pattern: string, part: 'prefilter' | 'strptime'): string {
  return pattern
    .split(/(%[A-Za-z])/)
    .map((piece) => {
      if (piece.startsWith('%'))
        return (DIRECTIVES[piece.slice(1)] as (typeof DIRECTIVES)['A'])[part];
      // Both turn a space of the pattern into "one or more white space".
      return piece
        .split(' ')
        .map(escape)
        .join(String.raw`\s+`);
    })
    .join('');
}

const COMPILED_DATES = DATE_PATTERNS.map(([pattern, mask]) => ({
  mask,
  prefilter: new RegExp(`^${compilePattern(pattern, 'prefilter')}$`, 'u'),
  // strptime matches from the start and then insists that nothing is left over; a match that
  // stops early (an alternation taking a shorter digit run) fails rather than backtracking further.
  strptime: new RegExp(`^${compilePattern(pattern, 'strptime')}`, 'iu'),
}));

const daysIn = (year: number, month: number): number =>
  new Date(Date.UTC(year, month, 0)).getUTCDate();
const digitsValue = (text: string): number => Number(asciiDigits(text));

/** _parse_date: the first pattern that strptime accepts, for years 1700-2016 (1900 when none is given). */
function parseDate(text: string): NumericValue | undefined {
  for (const { mask, prefilter, strptime } of COMPILED_DATES) {
    if (!prefilter.test(text)) continue;
    const match = strptime.exec(text);
    if (match === null || match[0].length !== text.length) continue;
    const groups = match.groups ?? {};
    const year = groups['Y'] === undefined ? 1900 : digitsValue(groups['Y']);
    const monthName = groups['B'] ?? groups['b'];
    const month =
      monthName !== undefined
        ? MONTHS.findIndex((m) => m.startsWith(monthName.toLowerCase())) + 1
        : groups['m'] !== undefined
          ? digitsValue(groups['m'])
          : 1;
    const day = groups['d'] !== undefined ? digitsValue(groups['d'].trim()) : 1;
    // datetime() refuses a day past the month's end (29 February without a year: 1900 is not leap).
    if (day > daysIn(year, month)) continue;
    if (year < MIN_YEAR || year > MAX_YEAR) continue;
    return {
      kind: 'date',
      date: {
        year: mask[0] ? year : undefined,
        month: mask[1] ? month : undefined,
        day: mask[2] ? day : undefined,
      },
    };
  }
  return undefined;
}

/** parse_text: the longest number and date spans of a normalised text, in text order. */
export function parseText(text: string): NumericSpan[] {
  const chars = Array.from(text);
  // Code point index of every UTF-16 offset, for the regular expression's match positions.
  const pointAt: number[] = [];
  chars.forEach((char, i) => {
    for (let k = 0; k < char.length; k += 1) pointAt.push(i);
  });
  pointAt.push(chars.length);
  const spans = new Map<string, NumericSpan>();
  const add = (begin: number, end: number, value: NumericValue): void => {
    const key = `${begin},${end}`;
    const span = spans.get(key) ?? { begin, end, values: [] };
    span.values.push(value);
    spans.set(key, span);
  };
  for (const match of text.matchAll(NUMBER_PATTERN)) {
    const number = parseNumber(match[0]);
    const begin = pointAt[match.index] as number;
    const end = pointAt[match.index + match[0].length] as number;
    if (number !== undefined) add(begin, end, { kind: 'number', value: number });
  }
  for (const [begin, end] of allSpans(chars, 1)) {
    if (spans.has(`${begin},${end}`)) continue;
    const word = chars.slice(begin, end).join('');
    const number = parseNumber(word);
    if (number !== undefined) add(begin, end, { kind: 'number', value: number });
    const cardinal = NUMBER_WORDS.indexOf(word);
    if (cardinal >= 0) add(begin, end, { kind: 'number', value: cardinal });
    const ordinal = ORDINAL_WORDS.indexOf(word);
    if (ordinal >= 0) add(begin, end, { kind: 'number', value: ordinal });
  }
  for (const [begin, end] of allSpans(chars, MAX_DATE_NGRAM)) {
    const date = parseDate(chars.slice(begin, end).join(''));
    if (date !== undefined) add(begin, end, date);
  }
  // Longest first, then leftmost; a span inside one already taken is dropped.
  const ordered = [...spans.values()].sort(
    (a, b) => b.end - b.begin - (a.end - a.begin) || a.begin - b.begin,
  );
  const selected: NumericSpan[] = [];
  for (const span of ordered)
    if (!selected.some((s) => s.begin <= span.begin && span.end <= s.end)) selected.push(span);
  return selected.sort((a, b) => a.begin - b.begin);
}

/** A value as a sort key: a number, or the date fields every compared value has. */
export type SortKey = readonly number[];

/**
 * get_numeric_sort_key_fn: the key that compares these values, or undefined where Python raises
 * (numbers beside dates, or dates with no field in common).
 */
export function sortKeyFor(
  values: readonly NumericValue[],
): ((value: NumericValue) => SortKey) | undefined {
  const kinds = new Set(values.map((v) => v.kind));
  if (kinds.size !== 1) return undefined;
  if (kinds.has('number')) return (v) => [v.kind === 'number' ? v.value : Number.NaN];
  const fields = (['year', 'month', 'day'] as const).filter((field) =>
    values.every((v) => v.kind === 'date' && v.date[field] !== undefined),
  );
  if (fields.length === 0) return undefined;
  return (v) =>
    fields.map((field) => (v.kind === 'date' ? (v.date[field] ?? Number.NaN) : Number.NaN));
}

export function compareKeys(a: SortKey, b: SortKey): number {
  for (let i = 0; i < Math.min(a.length, b.length); i += 1) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return a.length - b.length;
}

/**
 * _consolidate_numeric_values over one column: the value type most cells hold (a date where the
 * two tie), each cell's first value of that type; none when under 70% of the cells have it.
 */
export function consolidateColumn(cells: readonly string[]): (NumericValue | undefined)[] {
  const perCell = cells.map((cell) => parseText(normalizeForMatch(cell)).flatMap((s) => s.values));
  const counts = { number: 0, date: 0 };
  for (const values of perCell)
    for (const kind of new Set(values.map((v) => v.kind))) counts[kind] += 1;
  const most = Math.max(counts.number, counts.date);
  if (most === 0 || most < cells.length * 0.7) return cells.map(() => undefined);
  const kind = counts.date === most ? 'date' : 'number';
  return perCell.map((values) => values.find((v) => v.kind === kind));
}

/** The question's numbers and dates, for the numeric relations. */
export function questionValues(question: string): NumericValue[] {
  return parseText(normalizeForMatch(question)).flatMap((span) => span.values);
}
