// A record's image is bytes (base64 or a binary value); a path is read only when the route opts
// in, only under its root, and a refusal never tells whether a file exists.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { ImageInputs, ImageRefusedError } from '../../../src/route/image-input.ts';
import { RecordProcessor, type Submit } from '../../../src/route/processor.ts';

let dir: string;
let root: string;
let png: Buffer;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'hugot-images-'));
  root = join(dir, 'root');
  await mkdir(join(root, 'sub'), { recursive: true });
  png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#336699' } })
    .png()
    .toBuffer();
  await writeFile(join(root, 'sub', 'cat.png'), png);
  await writeFile(join(dir, 'secret.png'), png);
  await symlink(join(dir, 'secret.png'), join(root, 'link.png'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const limits = { maxPixels: 10_000, maxBytes: 1_000_000 };

async function refusal(images: ImageInputs, input: unknown): Promise<ImageRefusedError> {
  try {
    await images.bytesOf(input, "'image'");
  } catch (err) {
    expect(err).toBeInstanceOf(ImageRefusedError);
    return err as ImageRefusedError;
  }
  throw new Error('expected a refusal');
}

describe('image inputs as bytes (the default)', () => {
  const images = new ImageInputs({ from: 'base64', ...limits });

  it('takes base64, a data: URL, and raw bytes', async () => {
    for (const input of [
      png.toString('base64'),
      `data:image/png;base64,${png.toString('base64')}`,
      png,
    ])
      expect(Buffer.from(await images.bytesOf(input, "'image'")).equals(png)).toBe(true);
  });

  it('never opens a path: an existing file and a missing one are refused alike', async () => {
    const existing = await refusal(images, join(root, 'sub', 'cat.png'));
    const missing = await refusal(images, join(root, 'sub', 'nothing.png'));
    expect(existing.reason).toBe('IMAGE_INVALID');
    expect(existing.message).toBe(missing.message);
    expect((await refusal(images, 'not base64!')).message).toContain('base64');
    expect((await refusal(images, 42)).reason).toBe('IMAGE_INVALID');
  });

  it('refuses an image over limits.maxImagePixels from its header', async () => {
    const small = new ImageInputs({ from: 'base64', maxPixels: 1000, maxBytes: 1_000_000 });
    const err = await refusal(small, png.toString('base64'));
    expect(err.reason).toBe('IMAGE_TOO_LARGE');
    expect(err.message).toContain('40x30');
  });
});

describe('image paths (opt-in, under a root)', () => {
  const images = (): ImageInputs => new ImageInputs({ from: 'path', root, ...limits });

  it('reads a file under the root, by relative or absolute path', async () => {
    expect(Buffer.from(await images().bytesOf('sub/cat.png', "'image'")).equals(png)).toBe(true);
    const absolute = join(root, 'sub', 'cat.png');
    expect(Buffer.from(await images().bytesOf(absolute, "'image'")).equals(png)).toBe(true);
  });

  it('refuses escapes (.., absolute, symlinks) with the same words as a missing file', async () => {
    const missing = (await refusal(images(), 'sub/nothing.png')).message;
    for (const path of [
      '../secret.png',
      'sub/../../secret.png',
      join(dir, 'secret.png'),
      'link.png',
      '/etc/passwd',
      'sub',
      '',
      'a\u0000b',
    ])
      expect((await refusal(images(), path)).message, path).toBe(missing);
    expect(missing).not.toContain(root);
  });

  it('refuses a file over limits.maxImageBytes', async () => {
    const tight = new ImageInputs({ from: 'path', root, maxPixels: 10_000, maxBytes: 10 });
    expect((await refusal(tight, 'sub/cat.png')).reason).toBe('IMAGE_TOO_LARGE');
  });
});

describe('image routes', () => {
  const base = (route: string): string => `
models: { m: { path: x } }
pipelines: { p: { task: imageClassification, model: m }, t: { task: textClassification, model: m } }
routes:
  - source: { type: kafka, topic: in, groupId: g }
${route}
    sink: { type: kafka, topic: out }
connections: { kafka: { brokers: [localhost:9092] } }
`;

  it('hand the pipeline bytes, never the string: a binary Kafka value, or base64', async () => {
    const seen: unknown[] = [];
    const submit: Submit = (_, input) => {
      seen.push(input);
      return Promise.resolve([{ label: 'cat', score: 1 }]);
    };
    const bytesRoute = parseConfigText(
      base('    pipeline: p\n    input: { format: bytes }\n    output: { mode: result }'),
      {},
    );
    const processor = new RecordProcessor(
      bytesRoute.routes[0] as (typeof bytesRoute.routes)[number],
      'imageClassification',
      bytesRoute.limits,
      submit,
    );
    const source = {
      value: png,
      key: null,
      headers: {},
      origin: { kind: 'kafka' as const, topic: 'in', partition: 0, offset: '1' },
    };
    expect((await processor.process(source)).kind).toBe('output');
    const jsonRoute = parseConfigText(base('    pipeline: p\n    input: { field: image }'), {});
    const json = new RecordProcessor(
      jsonRoute.routes[0] as (typeof jsonRoute.routes)[number],
      'imageClassification',
      jsonRoute.limits,
      submit,
    );
    const path = await json.process({
      ...source,
      value: Buffer.from(JSON.stringify({ image: '/etc/hostname' })),
    });
    expect(path).toMatchObject({ kind: 'dead', code: 'IMAGE_INVALID' });
    expect(
      (
        await json.process({
          ...source,
          value: Buffer.from(JSON.stringify({ image: png.toString('base64') })),
        })
      ).kind,
    ).toBe('output');
    expect(seen).toHaveLength(2);
    for (const input of seen) expect(Buffer.from(input as Uint8Array).equals(png)).toBe(true);
  });

  it('check their image settings at start-up', () => {
    const cases: [string, RegExp][] = [
      ['    pipeline: p\n    input: { images: { from: path } }', /absolute directory/],
      [
        '    pipeline: p\n    input: { images: { from: path, root: rel/dir } }',
        /absolute directory/,
      ],
      ['    pipeline: t\n    input: { images: { from: base64 } }', /does not take images/],
      [
        '    pipeline: t\n    input: { format: bytes }\n    output: { mode: result }',
        /image tasks/,
      ],
      ['    pipeline: p\n    input: { format: bytes }', /output.mode: result/],
    ];
    for (const [route, says] of cases) {
      expect(() => parseConfigText(base(route), {}), route).toThrow(ConfigError);
      expect(() => parseConfigText(base(route), {}), route).toThrow(says);
    }
    expect(() =>
      parseConfigText(
        base('    pipeline: p\n    input: { images: { from: path, root: /data } }'),
        {},
      ),
    ).not.toThrow();
  });
});
