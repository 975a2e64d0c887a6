// JSON records handled as text, so that merge mode never changes the input's bytes outside the
// output field: the result is spliced into the original text (a 64-bit id or `1e400` stays what it
// was; a JSON.parse / JSON.stringify round trip would round the one and turn the other into null).
// Everything here scans iteratively: a record nested 10,000 levels deep must not overflow the
// stack (JSON.stringify and structured cloning both recurse).

/** True when the text nests arrays / objects deeper than `max` (strings are skipped). */
export function nestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i += 1;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth += 1;
      if (depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth -= 1;
  }
  return false;
}

/** Why a result could not be spliced in: the record is not an object, or the field is taken. */
export class SpliceRefused extends Error {
  override name = 'SpliceRefused';
  readonly reason: 'not-an-object' | 'field-exists';
  constructor(reason: 'not-an-object' | 'field-exists', message: string) {
    super(message);
    this.reason = reason;
  }
}

/**
 * Puts `valueJson` at the dotted `path` of the JSON object `text` (already validated by
 * JSON.parse), creating intermediate objects. An existing field (the last of duplicate keys, the
 * one JSON.parse keeps) is replaced only when `overwrite` is set.
 */
export function spliceField(
  text: string,
  path: string,
  valueJson: string,
  overwrite: boolean,
): string {
  const parts = path.split('.');
  let open = skipSpace(text, 0);
  if (text.charCodeAt(open) !== OPEN_BRACE)
    throw new SpliceRefused(
      'not-an-object',
      `cannot add the result at '${path}': the record is not a JSON object`,
    );
  for (const [k, part] of parts.entries()) {
    const members = membersOf(text, open);
    const member = members.findLast((m) => m.key === part);
    const rest = parts.slice(k + 1);
    const nested = rest.reduceRight((inner, p) => `{${JSON.stringify(p)}:${inner}}`, valueJson);
    const at = parts.slice(0, k + 1).join('.');
    if (member === undefined) {
      const last = members.at(-1);
      const where = last === undefined ? open + 1 : last.valueEnd;
      const comma = last === undefined ? '' : ',';
      return `${text.slice(0, where)}${comma}${JSON.stringify(part)}:${nested}${text.slice(where)}`;
    }
    const isObject = text.charCodeAt(member.valueStart) === OPEN_BRACE;
    if (rest.length > 0 && isObject) {
      open = member.valueStart;
      continue;
    }
    if (!overwrite)
      throw new SpliceRefused(
        'field-exists',
        rest.length === 0
          ? `the record already has '${at}' (output.field); set output.overwrite: true to replace it`
          : `the record's '${at}' is not an object, so '${path}' (output.field) cannot be added; set output.overwrite: true to replace it`,
      );
    return `${text.slice(0, member.valueStart)}${nested}${text.slice(member.valueEnd)}`;
  }
  /* c8 ignore next: the last part always returns or throws above */
  throw new Error(`empty output field path '${path}'`);
}

interface Member {
  key: string;
  valueStart: number;
  valueEnd: number;
}

/** The members of the object whose `{` is at `open`. */
function membersOf(text: string, open: number): Member[] {
  const members: Member[] = [];
  let i = skipSpace(text, open + 1);
  if (text.charCodeAt(i) === CLOSE_BRACE) return members;
  for (;;) {
    const keyEnd = skipString(text, i);
    const key = JSON.parse(text.slice(i, keyEnd)) as string;
    const valueStart = skipSpace(text, skipSpace(text, keyEnd) + 1);
    const valueEnd = skipValue(text, valueStart);
    members.push({ key, valueStart, valueEnd });
    i = skipSpace(text, valueEnd);
    if (text.charCodeAt(i) !== COMMA) return members;
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, from: number): number {
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
    i += 1;
  }
}

/** `from` is at a string's opening quote; returns the index after its closing quote. */
function skipString(text: string, from: number): number {
  let i = from + 1;
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === BACKSLASH) i += 2;
    else if (c === QUOTE) return i + 1;
    else i += 1;
  }
}

function skipValue(text: string, from: number): number {
  const first = text.charCodeAt(from);
  if (first === QUOTE) return skipString(text, from);
  if (first === OPEN_BRACE || first === OPEN_BRACKET) {
    let depth = 0;
    let i = from;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === QUOTE) {
        i = skipString(text, i);
        continue;
      }
      if (c === OPEN_BRACE || c === OPEN_BRACKET) depth += 1;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth -= 1;
        if (depth === 0) return i + 1;
      }
      i += 1;
    }
  }
  // A number, true, false or null: up to the next delimiter.
  let i = from;
  for (;;) {
    const c = text.charCodeAt(i);
    if (
      Number.isNaN(c) ||
      c === COMMA ||
      c === CLOSE_BRACE ||
      c === CLOSE_BRACKET ||
      c === 0x20 ||
      c === 0x09 ||
      c === 0x0a ||
      c === 0x0d
    )
      return i;
    i += 1;
  }
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
