// JSON Schema -> a regular expression (ECMAScript syntax, `u` flag) whose every full match is
// JSON that the schema accepts. No well-kept npm library does this (the known ones are Python or
// Rust: outlines-core), so this is a small one over the subset that a regular language can
// express. Properties come in declared order with at most one space around the separators, which
// keeps the automaton small and stops a model from padding forever. Anything that would have to
// be enforced and cannot be (numeric bounds, recursion, open-ended objects) is refused with the
// path of the keyword, never silently dropped.

/** A schema feature this compiler cannot enforce; `path` leads to the keyword inside the schema. */
export class UnsupportedSchemaError extends Error {
  override name = 'UnsupportedSchemaError';
  readonly path: readonly (string | number)[];
  constructor(path: readonly (string | number)[], message: string) {
    super(message);
    this.path = path;
  }
}

type Path = readonly (string | number)[];
type Schema = Record<string, unknown>;

const WS = '[ ]?';
/** One character of a JSON string body: anything but a quote, a backslash or a control. */
const STRING_CHAR = String.raw`(?:[^"\\\x00-\x1F]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})`;
const INTEGER = String.raw`-?(?:0|[1-9][0-9]*)`;
const NUMBER = String.raw`${INTEGER}(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?`;

const FORMATS: Record<string, string> = {
  date: String.raw`[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])`,
  time: String.raw`(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`,
  'date-time': String.raw`[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])`,
  uuid: String.raw`[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}`,
};

/** Keywords that only describe: they change nothing about which values are valid. */
const ANNOTATIONS = new Set([
  'title',
  'description',
  '$schema',
  '$id',
  '$comment',
  'default',
  'examples',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$defs',
  'definitions',
]);

const KEYWORDS_OF: Record<string, ReadonlySet<string>> = {
  string: new Set(['minLength', 'maxLength', 'pattern', 'format']),
  number: new Set(),
  integer: new Set(),
  boolean: new Set(),
  null: new Set(),
  object: new Set(['properties', 'required', 'additionalProperties']),
  array: new Set(['items', 'minItems', 'maxItems']),
};
const COMBINERS = new Set(['type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', '$ref']);

/** The regex source for `schema`; throws UnsupportedSchemaError naming the offending keyword. */
export function jsonSchemaRegex(schema: unknown): string {
  if (!isSchema(schema)) throw new UnsupportedSchemaError([], 'the schema must be an object');
  return new Compiler(schema).compile(schema, [], []);
}

/** Escapes a literal for a `u`-flag regex (where only syntax characters may be escaped). */
export function regexLiteral(text: string): string {
  return text.replace(/[\^$\\.*+?()[\]{}|/]/g, '\\$&');
}

class Compiler {
  private readonly root: Schema;

  constructor(root: Schema) {
    this.root = root;
  }

  compile(schema: Schema, path: Path, refs: readonly string[]): string {
    for (const key of Object.keys(schema)) {
      if (ANNOTATIONS.has(key) || COMBINERS.has(key)) continue;
      if (Object.values(KEYWORDS_OF).some((keys) => keys.has(key))) continue;
      throw new UnsupportedSchemaError([...path, key], `'${key}' is not supported`);
    }
    if (schema['$ref'] !== undefined) return this.ref(schema, path, refs);
    if (schema['const'] !== undefined) return literalValue(schema['const']);
    if (schema['enum'] !== undefined) {
      const values = schema['enum'];
      if (!Array.isArray(values) || values.length === 0)
        throw new UnsupportedSchemaError([...path, 'enum'], "'enum' must be a non-empty array");
      return group(values.map(literalValue));
    }
    for (const key of ['anyOf', 'oneOf'] as const) {
      if (schema[key] !== undefined) return group(this.each(schema[key], [...path, key], refs));
    }
    if (schema['allOf'] !== undefined) {
      const parts = this.each(schema['allOf'], [...path, 'allOf'], refs);
      if (parts.length !== 1)
        throw new UnsupportedSchemaError(
          [...path, 'allOf'],
          "'allOf' with more than one schema is not supported (merge them into one)",
        );
      return parts[0] as string;
    }
    const type = schema['type'];
    if (type === undefined)
      throw new UnsupportedSchemaError(
        path,
        "a schema needs a 'type', 'enum', 'const', 'anyOf', 'oneOf' or '$ref' (any JSON value is not a regular language)",
      );
    const types = Array.isArray(type) ? type : [type];
    return group(
      types.map((t, i) => {
        const at = Array.isArray(type) ? [...path, 'type', i] : [...path, 'type'];
        if (typeof t !== 'string' || KEYWORDS_OF[t] === undefined)
          throw new UnsupportedSchemaError(at, `unknown type ${JSON.stringify(t)}`);
        this.rejectForeignKeywords(schema, t, types, path);
        return this.ofType(t, schema, path, refs);
      }),
    );
  }

  /** A keyword of no type listed (maxLength on a number) would be silently ignored: refused. */
  private rejectForeignKeywords(schema: Schema, type: string, types: unknown[], path: Path): void {
    const own = KEYWORDS_OF[type] as ReadonlySet<string>;
    for (const key of Object.keys(schema)) {
      if (own.has(key) || ANNOTATIONS.has(key) || COMBINERS.has(key)) continue;
      const ownedByOther = types.some((t) => typeof t === 'string' && KEYWORDS_OF[t]?.has(key));
      if (!ownedByOther)
        throw new UnsupportedSchemaError([...path, key], `'${key}' does not apply to type ${type}`);
    }
  }

  private ofType(type: string, schema: Schema, path: Path, refs: readonly string[]): string {
    switch (type) {
      case 'string':
        return stringRegex(schema, path);
      case 'number':
        return NUMBER;
      case 'integer':
        return INTEGER;
      case 'boolean':
        return '(?:true|false)';
      case 'null':
        return 'null';
      case 'object':
        return this.object(schema, path, refs);
      default:
        return this.array(schema, path, refs);
    }
  }

  private object(schema: Schema, path: Path, refs: readonly string[]): string {
    const properties = schema['properties'];
    if (properties === undefined) {
      if (schema['additionalProperties'] === false) return String.raw`\{${WS}\}`;
      throw new UnsupportedSchemaError(
        path,
        "an object needs 'properties' (objects with arbitrary keys are not supported)",
      );
    }
    if (!isSchema(properties))
      throw new UnsupportedSchemaError([...path, 'properties'], "'properties' must be an object");
    const required = schema['required'] ?? [];
    if (!Array.isArray(required) || !required.every((r) => typeof r === 'string'))
      throw new UnsupportedSchemaError(
        [...path, 'required'],
        "'required' must be an array of names",
      );
    for (const name of required)
      if (!(name in properties))
        throw new UnsupportedSchemaError(
          [...path, 'required'],
          `required property '${name}' is not among 'properties'`,
        );
    const members = Object.entries(properties).map(([name, sub]) => {
      const at = [...path, 'properties', name];
      if (!isSchema(sub))
        throw new UnsupportedSchemaError(at, 'a property schema must be an object');
      const value = this.compile(sub, at, refs);
      return {
        member: `${regexLiteral(JSON.stringify(name))}${WS}:${WS}${value}`,
        required: required.includes(name),
      };
    });
    // Walking from the last property: `after` is the rest when a member was already written (each
    // then starts with a comma), `first` the rest when none was; both stay polynomial in size.
    let after = '';
    let first = '';
    for (let i = members.length - 1; i >= 0; i -= 1) {
      const { member, required: isRequired } = members[i] as (typeof members)[number];
      const withComma = `${WS},${WS}${member}`;
      if (isRequired) {
        first = member + after;
        after = withComma + after;
      } else {
        first = first === '' && after === '' ? `(?:${member})?` : `(?:${member}${after}|${first})`;
        after = `(?:${withComma})?${after}`;
      }
    }
    return String.raw`\{${WS}${first}${WS}\}`;
  }

  private array(schema: Schema, path: Path, refs: readonly string[]): string {
    const items = schema['items'];
    if (!isSchema(items))
      throw new UnsupportedSchemaError(
        [...path, 'items'],
        "an array needs 'items' with one schema (tuples and any-value items are not supported)",
      );
    const item = this.compile(items, [...path, 'items'], refs);
    const min = count(schema, 'minItems', path) ?? 0;
    const max = count(schema, 'maxItems', path);
    if (max !== undefined && max < min)
      throw new UnsupportedSchemaError([...path, 'maxItems'], "'maxItems' is below 'minItems'");
    if (max === 0) return String.raw`\[${WS}\]`;
    const more = `(?:${WS},${WS}${item})`;
    const rest = `${more}{${Math.max(0, min - 1)},${max === undefined ? '' : max - 1}}`;
    const body = `${item}${rest}`;
    return String.raw`\[${WS}${min === 0 ? `(?:${body})?` : body}${WS}\]`;
  }

  private ref(schema: Schema, path: Path, refs: readonly string[]): string {
    const ref = schema['$ref'];
    const match = typeof ref === 'string' ? /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref) : null;
    if (match === null)
      throw new UnsupportedSchemaError(
        [...path, '$ref'],
        "only local references '#/$defs/<name>' or '#/definitions/<name>' are supported",
      );
    if (refs.includes(ref as string))
      throw new UnsupportedSchemaError(
        [...path, '$ref'],
        `'${String(ref)}' refers to itself: recursive schemas are not a regular language`,
      );
    const container = this.root[match[1] as string];
    const target = isSchema(container) ? container[match[2] as string] : undefined;
    if (!isSchema(target))
      throw new UnsupportedSchemaError([...path, '$ref'], `'${String(ref)}' is not defined`);
    return this.compile(target, [match[1] as string, match[2] as string], [...refs, ref as string]);
  }

  private each(value: unknown, path: Path, refs: readonly string[]): string[] {
    if (!Array.isArray(value) || value.length === 0)
      throw new UnsupportedSchemaError(path, 'must be a non-empty array of schemas');
    return value.map((sub, i) => {
      if (!isSchema(sub)) throw new UnsupportedSchemaError([...path, i], 'must be a schema object');
      return this.compile(sub, [...path, i], refs);
    });
  }
}

function stringRegex(schema: Schema, path: Path): string {
  const format = schema['format'];
  const pattern = schema['pattern'];
  const min = count(schema, 'minLength', path);
  const max = count(schema, 'maxLength', path);
  if (format !== undefined) {
    const body = typeof format === 'string' ? FORMATS[format] : undefined;
    if (body === undefined)
      throw new UnsupportedSchemaError(
        [...path, 'format'],
        `format ${JSON.stringify(format)} is not supported (supported: ${Object.keys(FORMATS).join(', ')})`,
      );
    if (pattern !== undefined || min !== undefined || max !== undefined)
      throw new UnsupportedSchemaError(
        [...path, 'format'],
        "'format' cannot be combined with 'pattern', 'minLength' or 'maxLength'",
      );
    return `"${body}"`;
  }
  if (pattern !== undefined) {
    if (typeof pattern !== 'string')
      throw new UnsupportedSchemaError([...path, 'pattern'], "'pattern' must be a string");
    if (min !== undefined || max !== undefined)
      throw new UnsupportedSchemaError(
        [...path, 'pattern'],
        "'pattern' cannot be combined with 'minLength' or 'maxLength'",
      );
    // The pattern describes the decoded string; written inside quotes it must be the whole body.
    return `"(?:${pattern})"`;
  }
  if (max !== undefined && min !== undefined && max < min)
    throw new UnsupportedSchemaError([...path, 'maxLength'], "'maxLength' is below 'minLength'");
  const repeat =
    min === undefined && max === undefined ? '*' : `{${min ?? 0},${max === undefined ? '' : max}}`;
  return `"${STRING_CHAR}${repeat}"`;
}

function count(schema: Schema, key: string, path: Path): number | undefined {
  const value = schema[key];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw new UnsupportedSchemaError([...path, key], `'${key}' must be a non-negative integer`);
  return value;
}

function literalValue(value: unknown): string {
  return regexLiteral(JSON.stringify(value));
}

function group(alternatives: readonly string[]): string {
  return alternatives.length === 1 ? (alternatives[0] as string) : `(?:${alternatives.join('|')})`;
}

function isSchema(value: unknown): value is Schema {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
