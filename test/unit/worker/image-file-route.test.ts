// Image tasks end to end through the file source: a base64 image field in JSONL records, real
// fixture models, results merged into each record (depth maps as base64 PNG), and refused images
// dead-lettered untouched with the reason, between good records that keep their order.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { DepthEstimationPipeline } from '../../../src/pipelines/vision/depth-estimation.ts';
import {
  ObjectDetectionPipeline,
  type Detection,
} from '../../../src/pipelines/vision/object-detection.ts';
import {
  type DeadLetter,
  readDeadLetters,
  readJsonl,
  runToEnd,
  scratchDir,
} from '../../helpers/file-route.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const DETR = join(FIXTURES, 'detr-object-detection');
const GLPN = join(FIXTURES, 'glpn-depth-estimation');
const dir = scratchDir('image-route');

const base64 = async (path: string): Promise<string> => (await readFile(path)).toString('base64');
describe('image routes through the file source', () => {
  it('detect objects and estimate depth per record; refused images go to the DLQ with the reason', async () => {
    const images = ['gradient_48x40_rgb.png', 'stripes_100x40_rgb.png', 'shapes_64x64_rgb.png'];
    const big = await sharp({
      create: { width: 300, height: 200, channels: 3, background: '#808080' },
    })
      .png()
      .toBuffer();
    const records = async (folder: string): Promise<Record<string, unknown>[]> => [
      { id: 'a', image: await base64(join(folder, 'images', images[0] as string)) },
      { id: 'corrupt', image: Buffer.from('not an image at all').toString('base64') },
      { id: 'b', image: await base64(join(folder, 'images', images[1] as string)) },
      { id: 'path', image: '/etc/hostname' },
      { id: 'huge', image: big.toString('base64') },
      { id: 'c', image: await base64(join(folder, 'images', images[2] as string)) },
    ];
    const detectIn = dir.file('frames.jsonl');
    const depthIn = dir.file('scenes.jsonl');
    await writeFile(detectIn, (await records(DETR)).map((r) => JSON.stringify(r)).join('\n'));
    const depthRecords = await records(GLPN);
    // 24x20 has no side left after GLPN's multiple-of-32 resize: refused by the pipeline.
    depthRecords.push({
      id: 'tiny',
      image: await base64(join(GLPN, 'images', 'noise_24x20_gray.png')),
    });
    await writeFile(depthIn, depthRecords.map((r) => JSON.stringify(r)).join('\n'));
    const out = (name: string): string => JSON.stringify(dir.file(name));
    const config = parseConfigText(
      `
models:
  detr: { path: ${JSON.stringify(DETR)} }
  glpn: { path: ${JSON.stringify(GLPN)} }
pipelines:
  detect: { task: objectDetection, model: detr, options: { threshold: 0.5 } }
  depth: { task: depthEstimation, model: glpn }
limits: { maxImagePixels: 50000 }
routes:
  - source: { type: file, path: ${JSON.stringify(detectIn)} }
    pipeline: detect
    input: { field: image }
    output: { field: objects }
    sink: { type: file, path: ${out('objects.jsonl')} }
    dlq: { type: file, path: ${out('objects-dlq.jsonl')} }
  - source: { type: file, path: ${JSON.stringify(depthIn)} }
    pipeline: depth
    input: { field: image }
    output: { field: depth }
    sink: { type: file, path: ${out('depth.jsonl')} }
    dlq: { type: file, path: ${out('depth-dlq.jsonl')} }
`,
      {},
    );
    await runToEnd(config);

    const store = new ModelStore();
    const detector = new ObjectDetectionPipeline(await store.load({ path: DETR }));
    const estimator = new DepthEstimationPipeline(await store.load({ path: GLPN }));
    const expectedObjects = await detector.run(images.map((i) => join(DETR, 'images', i)));
    const expectedDepth = await estimator.run(images.map((i) => join(GLPN, 'images', i)));
    await store.close();

    const objects = await readJsonl(dir.file('objects.jsonl'));
    expect(objects.map((r) => r['id'])).toEqual(['a', 'b', 'c']);
    objects.forEach((record, i) => {
      const found = record['objects'] as Detection[];
      expect(found.length).toBeGreaterThan(0);
      expect(found.map((d) => [d.label, d.box])).toEqual(
        expectedObjects[i]?.map((d) => [d.label, d.box]),
      );
      found.forEach((d, j) =>
        expect(d.score).toBeCloseTo(expectedObjects[i]?.[j]?.score ?? NaN, 6),
      );
    });

    const depth = await readJsonl(dir.file('depth.jsonl'));
    expect(depth.map((r) => r['id'])).toEqual(['a', 'b', 'c']);
    for (const [i, record] of depth.entries()) {
      const png = Buffer.from((record['depth'] as { depth: string }).depth, 'base64');
      expect(png.equals(Buffer.from(expectedDepth[i]?.depth ?? []))).toBe(true);
      const meta = await sharp(png).metadata();
      expect([meta.format, meta.channels]).toEqual(['png', 1]);
    }

    const dead = (name: string): Promise<DeadLetter[]> => readDeadLetters(dir.file(name));
    const detectDead = await dead('objects-dlq.jsonl');
    const depthDead = await dead('depth-dlq.jsonl');
    for (const letters of [detectDead, depthDead]) {
      expect(letters.slice(0, 3).map((d) => (JSON.parse(d.value) as { id: string }).id)).toEqual([
        'corrupt',
        'path',
        'huge',
      ]);
      expect(letters.slice(0, 3).map((d) => d.headers['hugot.error.code'])).toEqual([
        'IMAGE_INVALID',
        'IMAGE_INVALID',
        'IMAGE_TOO_LARGE',
      ]);
      expect(letters[2]?.headers['hugot.error.message']).toContain('limits.maxImagePixels');
    }
    expect(detectDead).toHaveLength(3);
    expect(depthDead).toHaveLength(4);
    expect(depthDead[3]?.headers).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(JSON.parse(depthDead[3]?.value ?? '{}')).toMatchObject({ id: 'tiny' });
  });
});
