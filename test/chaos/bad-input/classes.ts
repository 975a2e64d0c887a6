// The bad-input classes: records a producer could send by mistake or on purpose. Each says what a
// correct worker does with it: `dlq` (refused with a reason), `output` (processed, faithfully) or
// `either` (a faithful output or a dead letter are both right). The suite checks the rest: the
// worker stays up, nothing is lost, the good records around each one come out unchanged.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import type { IHeaders } from 'kafkajs';

export type Expectation = 'dlq' | 'output' | 'either';
export type BadPipeline = 'text' | 'image' | 'image-path';

export interface BadInputClass {
  name: string;
  pipeline: BadPipeline;
  value: Buffer | null;
  expect: Expectation;
  /** Routes it runs on; a value with a newline cannot be one line of a file. */
  routes: ('file' | 'kafka')[];
  key?: Buffer | string | null;
  headers?: IHeaders;
}

const IMAGES = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'models',
  'vit-image-classification',
  'images',
);
export const GOOD_PNG = readFileSync(join(IMAGES, 'gradient_48x40_rgb.png'));

const b = (text: string): Buffer => Buffer.from(text, 'utf8');
/** A JSON record with the class's id, then `rest` spliced in as raw text. */
const rec = (name: string, rest: string): Buffer => b(`{"id":"bad-${name}",${rest}}`);

function nested(depth: number, open: string, close: string): string {
  return `${open.repeat(depth)}${close.repeat(depth)}`;
}

/** A PNG whose header claims width x height (valid CRC), with no pixel data worth the name. */
function pngClaiming(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer): Buffer => {
    const body = Buffer.concat([b(type), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.writeUInt8(8, 8);
  ihdr.writeUInt8(2, 9);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

const both: ('file' | 'kafka')[] = ['file', 'kafka'];
const kafkaOnly: ('file' | 'kafka')[] = ['kafka'];

function text(
  name: string,
  value: Buffer | null,
  expect: Expectation,
  extra: Partial<BadInputClass> = {},
): BadInputClass {
  return { name, pipeline: 'text', value, expect, routes: both, ...extra };
}

function image(name: string, field: string, expect: Expectation): BadInputClass {
  return { name, pipeline: 'image', value: rec(name, `"image":${field}`), expect, routes: both };
}

function imagePath(name: string, path: string, expect: Expectation): BadInputClass {
  return {
    name,
    pipeline: 'image-path',
    value: rec(name, `"image":${JSON.stringify(path)}`),
    expect,
    routes: both,
  };
}

export function badInputClasses(): BadInputClass[] {
  const random = Buffer.alloc(512);
  for (let i = 0; i < random.length; i += 1)
    random[i] = (i * 73 + 41) % 256 === 0x7b ? 0 : (i * 73 + 41) % 256;
  return [
    // Encoding
    text(
      'invalid-utf8',
      Buffer.concat([
        b('{"id":"bad-invalid-utf8","text":"caf'),
        Buffer.from([0xff, 0xfe]),
        b('"}'),
      ]),
      'dlq',
    ),
    text(
      'overlong-utf8',
      Buffer.concat([b('{"id":"bad-overlong-utf8","text":"'), Buffer.from([0xc0, 0xaf]), b('"}')]),
      'dlq',
    ),
    text(
      'surrogate-bytes-cesu8',
      Buffer.concat([
        b('{"id":"bad-surrogate-bytes-cesu8","text":"'),
        Buffer.from([0xed, 0xa0, 0x80]),
        b('"}'),
      ]),
      'dlq',
    ),
    text(
      'utf16le-record',
      Buffer.from('{"id":"bad-utf16le-record","text":"hello"}', 'utf16le'),
      'dlq',
    ),
    text(
      'bom-prefix',
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), rec('bom-prefix', '"text":"hello"')]),
      'either',
    ),
    text(
      'raw-control-chars',
      rec('raw-control-chars', '"text":"a\u0001b\u0007c\u001fd"'),
      'either',
    ),
    text(
      'escaped-nul-and-controls',
      rec('escaped-nul-and-controls', '"text":"a\\u0000b\\u0007c"'),
      'either',
    ),
    text('escaped-lone-surrogate', rec('escaped-lone-surrogate', '"text":"x\\ud800y"'), 'either'),
    text(
      'emoji-combining-rtl-zero-width',
      rec(
        'emoji-combining-rtl-zero-width',
        `"text":"e\u0301 \u{1F600}\u{1F469}\u200D\u{1F4BB} \u05E9\u05DC\u05D5\u05DD \u200B\u2060"`,
      ),
      'output',
    ),
    text(
      'escaped-unicode',
      rec('escaped-unicode', '"text":"caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\/"'),
      'output',
    ),
    // Syntax
    text('truncated-json', b('{"id":"bad-truncated-json","text":"hello wor'), 'dlq'),
    text('trailing-garbage', b('{"id":"bad-trailing-garbage","text":"x"} trailing'), 'dlq'),
    text(
      'two-objects-one-record',
      b('{"id":"bad-two-objects-one-record","text":"a"}{"text":"b"}'),
      'dlq',
    ),
    text('json-comment', b('{"id":"bad-json-comment", /* c */ "text":"x"}'), 'dlq'),
    text('single-quotes', b("{'id':'bad-single-quotes','text':'x'}"), 'dlq'),
    text('trailing-comma', b('{"id":"bad-trailing-comma","text":"x",}'), 'dlq'),
    text('nan-literal', rec('nan-literal', '"text":"x","score":NaN'), 'dlq'),
    text('infinity-literal', rec('infinity-literal', '"text":"x","score":-Infinity'), 'dlq'),
    // Depth and size
    text(
      'nesting-10000-arrays',
      rec('nesting-10000-arrays', `"text":"x","deep":${nested(10_000, '[', ']')}`),
      'dlq',
    ),
    text(
      'nesting-10000-objects',
      rec(
        'nesting-10000-objects',
        `"text":"x","deep":${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
      ),
      'dlq',
    ),
    text('nesting-100', rec('nesting-100', `"text":"x","deep":${nested(100, '[', ']')}`), 'dlq'),
    text(
      'nesting-40-allowed',
      rec('nesting-40-allowed', `"text":"x","deep":${nested(40, '[', ']')}`),
      'output',
    ),
    text(
      'brackets-inside-string',
      rec('brackets-inside-string', `"text":"${'[{'.repeat(5_000)}"`),
      'output',
    ),
    text('huge-text-200k', rec('huge-text-200k', `"text":"${'word '.repeat(40_000)}"`), 'either'),
    text('record-2mb', rec('record-2mb', `"text":"x","pad":"${'p'.repeat(2_000_000)}"`), 'dlq'),
    text(
      'output-over-sink-limit',
      rec('output-over-sink-limit', `"text":"x","pad":"${'p'.repeat(1_048_000)}"`),
      'either',
    ),
    text('huge-key-100k', rec('huge-key-100k', `"text":"x","${'k'.repeat(100_000)}":1`), 'either'),
    text(
      'many-keys-20000',
      rec(
        'many-keys-20000',
        `"text":"x",${Array.from({ length: 20_000 }, (_, i) => `"k${i}":${i}`).join(',')}`,
      ),
      'either',
    ),
    text(
      'wide-array-100k',
      rec(
        'wide-array-100k',
        `"text":"x","wide":[${Array.from({ length: 100_000 }, () => '0').join(',')}]`,
      ),
      'either',
    ),
    // Types of the input field
    text('text-number', rec('text-number', '"text":42'), 'dlq'),
    text('text-boolean', rec('text-boolean', '"text":true'), 'dlq'),
    text('text-null', rec('text-null', '"text":null'), 'dlq'),
    text('text-object', rec('text-object', '"text":{"text":"x"}'), 'either'),
    text('text-array', rec('text-array', '"text":["a","b"]'), 'either'),
    text('text-missing', rec('text-missing', '"body":"x"'), 'dlq'),
    text('text-empty', rec('text-empty', '"text":""'), 'either'),
    text('text-whitespace', rec('text-whitespace', '"text":" \\t\\n "'), 'either'),
    // Shapes of the record
    text('array-not-object', b('[{"id":"bad-array-not-object","text":"x"}]'), 'dlq'),
    text('json-string', b('"bad-json-string"'), 'dlq'),
    text('json-number', b('12345'), 'dlq'),
    text('json-null', b('null'), 'dlq'),
    text('json-true', b('true'), 'dlq'),
    // Faithful merge
    text(
      'big-integers',
      rec(
        'big-integers',
        '"text":"x","big":12345678901234567890123,"i64":9007199254740993,"neg":-9223372036854775808',
      ),
      'either',
    ),
    text('number-1e400', rec('number-1e400', '"text":"x","huge":1e400,"tiny":1e-400'), 'either'),
    text(
      'number-spellings',
      rec(
        'number-spellings',
        '"text":"x","a":-0,"b":1.0,"c":1E5,"d":0.1000000000000000055511151231257827',
      ),
      'either',
    ),
    text('duplicate-keys', rec('duplicate-keys', '"text":"first","text":"second"'), 'either'),
    text(
      'unknown-fields',
      rec('unknown-fields', '"text":"x","meta":{"a":[1,{"b":null}],"c":"\\u00e9"},"z":false'),
      'output',
    ),
    text('odd-whitespace', b('{ "id" :\t"bad-odd-whitespace" ,\r "text"  :  "x"   }'), 'either'),
    text(
      'existing-output-field',
      rec('existing-output-field', '"text":"x","result":"keep me"'),
      'either',
    ),
    text(
      'prototype-keys',
      rec(
        'prototype-keys',
        '"text":"x","__proto__":{"polluted":1},"constructor":{"prototype":{"p":1}}',
      ),
      'either',
    ),
    // Kafka only: values, keys and headers a file cannot carry
    text(
      'pretty-multiline-json',
      b('{\n  "id": "bad-pretty-multiline-json",\n  "text": "x"\n}'),
      'either',
      { routes: kafkaOnly },
    ),
    text('empty-value', b(''), 'dlq', { routes: kafkaOnly }),
    text('whitespace-value', b(' \t '), 'dlq', { routes: kafkaOnly }),
    text('binary-value', random, 'dlq', { routes: kafkaOnly }),
    text('tombstone-null-value', null, 'dlq', { routes: kafkaOnly }),
    text('binary-key', rec('binary-key', '"text":"x"'), 'output', {
      routes: kafkaOnly,
      key: Buffer.from([0x00, 0xff, 0x80, 0x0a]),
    }),
    text('binary-header-values', rec('binary-header-values', '"text":"x"'), 'output', {
      routes: kafkaOnly,
      headers: { bin: Buffer.from([0xff, 0x00, 0xc3]), txt: 'plain' },
    }),
    text('repeated-headers', rec('repeated-headers', '"text":"x"'), 'output', {
      routes: kafkaOnly,
      headers: { tag: ['a', 'b', Buffer.from([0xfe])] },
    }),
    text('giant-header-512k', rec('giant-header-512k', '"text":"x"'), 'either', {
      routes: kafkaOnly,
      headers: { big: 'h'.repeat(512 * 1024) },
    }),
    text('many-headers-2000', rec('many-headers-2000', '"text":"x"'), 'either', {
      routes: kafkaOnly,
      headers: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`h${i}`, `${i}`])),
    }),
    text('spoofed-error-headers', rec('spoofed-error-headers', '"text":"x"'), 'either', {
      routes: kafkaOnly,
      headers: { 'hugot.error.code': 'FAKE', 'hugot.error.stage': 'none' },
    }),
    // Images, base64 by default
    image('image-not-base64', '"!!! not base64 ***"', 'dlq'),
    image(
      'image-base64-of-text',
      JSON.stringify(Buffer.from('hello, not an image').toString('base64')),
      'dlq',
    ),
    image(
      'image-truncated-png',
      JSON.stringify(GOOD_PNG.subarray(0, 60).toString('base64')),
      'dlq',
    ),
    image(
      'image-pixel-bomb-header',
      JSON.stringify(pngClaiming(60_000, 60_000).toString('base64')),
      'dlq',
    ),
    image('image-number', '12', 'dlq'),
    image('image-empty-string', '""', 'dlq'),
    image('image-path-on-base64-route', '"/etc/passwd"', 'dlq'),
    image(
      'image-data-url',
      JSON.stringify(`data:image/png;base64,${GOOD_PNG.toString('base64')}`),
      'either',
    ),
    // Images by path, only under the route's root
    imagePath('path-traversal-relative', '../../../../../../etc/passwd', 'dlq'),
    imagePath('path-absolute-outside-root', '/etc/passwd', 'dlq'),
    imagePath('path-nonexistent-outside-root', '/etc/hugot-chaos-no-such-file', 'dlq'),
    imagePath('path-symlink-escaping-root', 'escape.png', 'dlq'),
    imagePath('path-directory', '.', 'dlq'),
    imagePath('path-nonexistent-in-root', 'missing.png', 'dlq'),
  ];
}

/** A good record of a pipeline: must come out processed and byte-faithful. */
export function goodRecord(pipeline: BadPipeline, i: number): Buffer {
  if (pipeline === 'text')
    return b(`{"id":"good-${i}","text":"A perfectly ordinary e-mail number ${i}.","n":${i}}`);
  if (pipeline === 'image')
    return b(`{"id":"good-${i}","image":"${GOOD_PNG.toString('base64')}","n":${i}}`);
  return b(`{"id":"good-${i}","image":"good.png","n":${i}}`);
}
