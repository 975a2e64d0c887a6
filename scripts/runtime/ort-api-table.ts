// Turns ONNX Runtime's C API header into src/runtime/native/ort-api-table.ts: every member of
// `struct OrtApi`, in order (its index is its slot in the function table that OrtGetApiBase hands
// out), with its C signature and the koffi prototype our binding declares it with.
//
//   node scripts/runtime/ort-api-table.ts                 # the pinned header, from the Go proxy
//   node scripts/runtime/ort-api-table.ts --header FILE   # any onnxruntime_c_api.h
//
// Where the header comes from: no registry reachable here serves the onnxruntime 1.30 sources
// (NuGet is not reachable, the GitHub snapshot is too large to bring), so the pinned source is the
// header vendored by the Go module github.com/yalue/onnxruntime_go on proxy.golang.org. The table
// is append-only across releases, so an older header's slots are the same slots in the 1.30
// library; the binding asks the library for exactly this header's ORT_API_VERSION.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import yauzl from 'yauzl';

const GO_MODULE = 'github.com/yalue/onnxruntime_go';
const GO_MODULE_VERSION = 'v1.27.0';
const HEADER_IN_MODULE = 'onnxruntime_c_api.h';
const OUTPUT = fileURLToPath(new URL('../../src/runtime/native/ort-api-table.ts', import.meta.url));

const PRIMITIVES = new Set([
  'void',
  'bool',
  'char',
  'int',
  'float',
  'double',
  'size_t',
  'int8_t',
  'uint8_t',
  'int16_t',
  'uint16_t',
  'int32_t',
  'uint32_t',
  'int64_t',
  'uint64_t',
]);

export interface ApiEntry {
  name: string;
  /** The koffi prototype: pointers as `void *` (in strings as `const char *`), enums as `int`. */
  proto: string;
}

export interface ParsedHeader {
  apiVersion: number;
  entries: ApiEntry[];
}

export function parseHeader(text: string): ParsedHeader {
  const version = /#define\s+ORT_API_VERSION\s+(\d+)/.exec(text);
  if (version === null) throw new Error('the header has no ORT_API_VERSION');
  const noComments = text.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/[^\n]*/g, '');
  const enums = new Set<string>();
  for (const m of noComments.matchAll(/typedef\s+enum\s+(\w+)/g)) enums.add(m[1] as string);
  for (const m of noComments.matchAll(/\}\s*(\w+)\s*;/g)) enums.add(m[1] as string);
  for (const m of noComments.matchAll(/(?:^|\s)enum\s+(\w+)\s*\{/g)) enums.add(m[1] as string);
  const pointerTypedefs = new Set(['OrtStatusPtr']);
  for (const m of noComments.matchAll(
    /typedef\s+[^;{}]*?\(\s*(?:ORT_API_CALL\s*)?\*\s*(\w+)\s*\)/g,
  ))
    pointerTypedefs.add(m[1] as string);
  // Pointer typedefs of opaque structs: `typedef struct OrtX* OrtXPtr;`, `typedef void* Handle;`.
  for (const m of noComments.matchAll(/typedef\s+(?:const\s+)?(?:struct\s+)?\w+\s*\*\s*(\w+)\s*;/g))
    pointerTypedefs.add(m[1] as string);
  const start = noComments.indexOf('struct OrtApi {');
  if (start < 0) throw new Error('the header has no struct OrtApi');
  const end = noComments.indexOf('\n};', start);
  const body = noComments
    .slice(start + 'struct OrtApi {'.length, end)
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join(' ');
  const types: TypeSets = { enums, pointerTypedefs };
  const entries = splitMembers(body).map((member) => parseMember(member, types));
  return { apiVersion: Number(version[1]), entries };
}

interface TypeSets {
  enums: ReadonlySet<string>;
  pointerTypedefs: ReadonlySet<string>;
}

/** Members end at a `;` outside parentheses. */
function splitMembers(body: string): string[] {
  const members: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of body) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ';' && depth === 0) {
      if (current.trim() !== '') members.push(current.replace(/\s+/g, ' ').trim());
      current = '';
    } else current += ch;
  }
  return members;
}

/** The text inside the parenthesis that opens at `open`. */
function inside(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i += 1) {
    if (text[i] === '(') depth += 1;
    if (text[i] === ')') {
      depth -= 1;
      if (depth === 0) return text.slice(open + 1, i);
    }
  }
  throw new Error(`unbalanced parentheses in: ${text}`);
}

/** Splits on commas outside parentheses. */
function splitArgs(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of text) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      out.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim() !== '') out.push(current.trim());
  return out;
}

function parseMember(member: string, types: TypeSets): ApiEntry {
  let name: string;
  let returns: string;
  let params: string[];
  if (member.startsWith('ORT_API2_STATUS(')) {
    const args = splitArgs(inside(member, member.indexOf('(')));
    name = args[0] as string;
    returns = 'OrtStatus*';
    params = args.slice(1);
  } else if (member.startsWith('ORT_CLASS_RELEASE(')) {
    const cls = inside(member, member.indexOf('(')).trim();
    name = `Release${cls}`;
    returns = 'void';
    params = [`Ort${cls}* input`];
  } else if (member.startsWith('ORT_API_T(')) {
    const args = splitArgs(inside(member, member.indexOf('(')));
    returns = args[0] as string;
    name = args[1] as string;
    params = args.slice(2);
  } else {
    const m = /^(.*?)\(\s*ORT_API_CALL\s*\*\s*(\w+)\s*\)\s*\(/.exec(member);
    if (m === null) throw new Error(`an OrtApi member this script cannot read: ${member}`);
    returns = m[1] as string;
    name = m[2] as string;
    params = splitArgs(inside(member, m[0].length - 1));
  }
  // `T name[]` is `T* name` to the ABI.
  const cParams = params
    .map((p) => stripAnnotations(p).replace(/(\w+)\s*\[\s*\w*\s*\]$/, '* $1'))
    .filter((p) => p !== '' && p !== 'void');
  const cReturns = stripAnnotations(returns);
  const koffiParams = cParams.map((p, i) => `${koffiType(typeOf(p), types, p)} ${paramName(p, i)}`);
  return {
    name,
    proto: `${koffiType(cReturns, types, returns)} ${name}(${koffiParams.join(', ')})`,
  };
}

function stripAnnotations(text: string): string {
  return text
    .replace(/\b_[A-Z][A-Za-z_]*_\s*(\([^()]*\))?/g, ' ')
    .replace(/\bORT_ALL_ARGS_NONNULL\b|\bNO_EXCEPTION\b|\bORT_MUST_USE_RESULT\b/g, ' ')
    .replace(/\s+/g, ' ')
    .replace(/\s*\*\s*/g, '* ')
    .trim();
}

/** The parameter's type: everything but its last word, unless it is only a type. */
function typeOf(param: string): string {
  const m = /^(.*?[\s*])(\w+)$/.exec(param);
  if (m === null) return param;
  const type = (m[1] as string).trim();
  return type === 'const' || type === '' ? param : type;
}

function paramName(param: string, index: number): string {
  const m = /(\w+)$/.exec(param);
  const word = m?.[1];
  return word !== undefined && typeOf(param) !== param ? word : `arg${index}`;
}

function koffiType(cType: string, types: TypeSets, context: string): string {
  const type = cType.replace(/\s+/g, ' ').trim();
  if (type.includes('*')) {
    const base = type
      .replace(/\*/g, '')
      .replace(/\bconst\b/g, '')
      .trim();
    const stars = (type.match(/\*/g) ?? []).length;
    if (stars === 1 && (base === 'char' || base === 'ORTCHAR_T')) return 'const char *';
    return 'void *';
  }
  const base = type.replace(/\b(?:const|enum|struct)\b/g, '').trim();
  if (PRIMITIVES.has(base)) return base;
  if (types.pointerTypedefs.has(base)) return 'void *';
  if (types.enums.has(base)) return 'int';
  throw new Error(`a type this script does not know: '${base}' in ${context}`);
}

async function headerFromGoProxy(): Promise<{ text: string; source: string }> {
  const url = `https://proxy.golang.org/${GO_MODULE}/@v/${GO_MODULE_VERSION}.zip`;
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  const zip = Buffer.from(await response.arrayBuffer());
  const wanted = `${GO_MODULE}@${GO_MODULE_VERSION}/${HEADER_IN_MODULE}`;
  const text = await new Promise<string>((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (err, archive) => {
      if (err !== null) return reject(err);
      archive.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName !== wanted) return archive.readEntry();
        archive.openReadStream(entry, (openErr, stream) => {
          if (openErr !== null) return reject(openErr);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        });
      });
      archive.on('end', () => reject(new Error(`${url} has no ${wanted}`)));
      archive.readEntry();
    });
  });
  return { text, source: `${url} (${HEADER_IN_MODULE})` };
}

export function renderTable(parsed: ParsedHeader, source: string, sha256: string): string {
  const rows = parsed.entries.map(
    (e) => `  [${JSON.stringify(e.name)}, ${JSON.stringify(e.proto)}],`,
  );
  return [
    '// Generated by scripts/runtime/ort-api-table.ts; do not edit by hand, run the script.',
    `// Source: ${source}`,
    `// sha256 ${sha256}`,
    "// One row per member of struct OrtApi, in order: a row's index is its slot in the table.",
    '// (Prettier skips this file: .prettierignore.)',
    `export const ORT_API_VERSION = ${parsed.apiVersion};`,
    `export const ORT_API_HEADER_SHA256 = ${JSON.stringify(sha256)};`,
    'export const ORT_API_TABLE: readonly (readonly [name: string, proto: string])[] = [',
    ...rows,
    '];',
    '',
  ].join('\n');
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { header: { type: 'string' } } });
  const { text, source } =
    values.header !== undefined
      ? { text: readFileSync(values.header, 'utf8'), source: values.header }
      : await headerFromGoProxy();
  const parsed = parseHeader(text);
  const sha256 = createHash('sha256').update(text).digest('hex');
  writeFileSync(OUTPUT, renderTable(parsed, source, sha256));
  process.stdout.write(
    `${JSON.stringify({ apiVersion: parsed.apiVersion, entries: parsed.entries.length, sha256, output: OUTPUT })}\n`,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
