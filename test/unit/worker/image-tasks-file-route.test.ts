// Image tasks end to end through the file source: JSONL records holding base64 images, the real
// SegFormer and OWL-ViT models in worker threads, masks written back as base64 PNG, and refused images
// dead-lettered with their reason.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { createHugot } from '../../../src/hugot.ts';
import type { Segment } from '../../../src/pipelines/vision/image-segmentation.ts';
import type { Detection } from '../../../src/pipelines/vision/zero-shot-object-detection.ts';
import { readDeadLetters, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'test', 'fixtures', 'models', 'segformer-semantic-segmentation');
const IMAGES = ['gradient_48x40_rgb.png', 'shapes_64x64_rgb.png', 'noise_24x20_gray.png'];
const dir = scratchDir('segmentation-route');

describe('image tasks through the file route', () => {
  it('writes masks as base64 PNG beside each record and dead-letters images it cannot read', async () => {
    const pngs = await Promise.all(IMAGES.map((name) => readFile(join(MODEL, 'images', name))));
    const truncated = (pngs[1] as Buffer).subarray(0, 60);
    // A valid header claiming more pixels than limits.maxImagePixels: refused before decoding.
    const huge = await sharp({
      create: { width: 300, height: 300, channels: 3, background: '#000' },
    })
      .png()
      .toBuffer();
    const lines = [
      { id: 'a', image: (pngs[0] as Buffer).toString('base64') },
      { id: 'corrupt', image: truncated.toString('base64') },
      { id: 'b', image: (pngs[1] as Buffer).toString('base64') },
      { id: 'not-base64', image: 'images/shapes_64x64_rgb.png' },
      { id: 'not-an-image', image: Buffer.from('plain text, not pixels').toString('base64') },
      { id: 'huge', image: huge.toString('base64') },
      { id: 'c', image: `data:image/png;base64,${(pngs[2] as Buffer).toString('base64')}` },
    ];
    const input = dir.file('in.jsonl');
    await writeFile(input, lines.map((l) => JSON.stringify(l)).join('\n'));
    const config = parseConfigText(
      `
models: { seg: { path: ${JSON.stringify(MODEL)} } }
pipelines: { segment: { task: imageSegmentation, model: seg } }
limits: { maxImagePixels: 50000 }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: segment
    input: { field: image }
    output: { field: segments }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`,
      {},
    );
    const worker = await runToEnd(config);

    const out = (await readFile(dir.file('out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            id: string;
            segments: { label: string; score: null; mask: string }[];
          },
      );
    expect(out.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    const hugot = createHugot();
    hugot.registerModel('seg', { path: MODEL });
    await hugot.registerPipeline('segment', { task: 'imageSegmentation', model: 'seg' });
    const direct = await hugot.run<Segment[]>('segment', pngs);
    await hugot.close();
    out.forEach((record, i) => {
      const want = direct[i] as Segment[];
      expect(record.segments.map((s) => [s.label, s.score])).toEqual(
        want.map((s) => [s.label, s.score]),
      );
      record.segments.forEach((s, j) =>
        expect(Buffer.from(s.mask, 'base64').equals(Buffer.from(want[j]?.mask ?? []))).toBe(true),
      );
    });

    const dlq = await readDeadLetters(dir.file('dlq.jsonl'));
    // Refused records come out in the order they were refused: the route checks the image's
    // header before it joins a batch, the truncated PNG (its header is intact) fails when an
    // inference thread decodes it, alone, without failing its batch mates.
    const byId = new Map(dlq.map((d) => [(JSON.parse(d.value) as { id: string }).id, d.headers]));
    expect([...byId.keys()].sort()).toEqual(['corrupt', 'huge', 'not-an-image', 'not-base64']);
    expect(byId.get('corrupt')).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
      'hugot.error.origin.line': '2',
    });
    expect(byId.get('corrupt')?.['hugot.error.message']).toContain('cannot read an image');
    expect(byId.get('not-base64')).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'IMAGE_INVALID',
      'hugot.error.origin.line': '4',
    });
    expect(byId.get('not-an-image')).toMatchObject({
      'hugot.error.code': 'IMAGE_INVALID',
      'hugot.error.origin.line': '5',
    });
    expect(byId.get('huge')).toMatchObject({
      'hugot.error.code': 'IMAGE_TOO_LARGE',
      'hugot.error.origin.line': '6',
    });
    expect(byId.get('huge')?.['hugot.error.message']).toContain('limits.maxImagePixels');
    expect(worker.counters()['route-0']).toEqual({
      received: 7,
      written: 3,
      deadLettered: 4,
      retried: 0,
      truncated: 0,
      total: 7,
    });
  });

  it('runs an image task whose model has a tokenizer too (OWL-ViT): labels from the options', async () => {
    const owl = join(ROOT, 'test', 'fixtures', 'models', 'owlvit-zero-shot-object-detection');
    const pngs = await Promise.all(IMAGES.map((name) => readFile(join(owl, 'images', name))));
    const input = dir.file('owl.jsonl');
    await writeFile(
      input,
      pngs.map((png, i) => JSON.stringify({ id: i, image: png.toString('base64') })).join('\n'),
    );
    const config = parseConfigText(
      `
models: { owl: { path: ${JSON.stringify(owl)} } }
pipelines:
  find: { task: zeroShotObjectDetection, model: owl, options: { candidateLabels: [cat, dog], threshold: 0.3, topK: 3 } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: find
    input: { field: image }
    output: { field: objects }
    sink: { type: file, path: ${dir.quoted('owl-out.jsonl')} }
`,
      {},
    );
    await runToEnd(config);
    const out = (await readFile(dir.file('owl-out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: number; objects: Detection[] });
    const hugot = createHugot();
    hugot.registerModel('owl', { path: owl });
    await hugot.registerPipeline('find', {
      task: 'zeroShotObjectDetection',
      model: 'owl',
      options: { candidateLabels: ['cat', 'dog'], threshold: 0.3, topK: 3 },
    });
    const direct = await hugot.run<Detection[]>('find', pngs);
    await hugot.close();
    expect(out.map((r) => r.id)).toEqual([0, 1, 2]);
    expect(out.map((r) => r.objects)).toEqual(direct);
    expect(out.some((r) => r.objects.length > 0)).toBe(true);
  });
});
