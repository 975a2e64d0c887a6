// SAM prompts end to end through the file source: JSONL records carrying a base64 image beside
// points or boxes, the real tiny SAM fixture (two ONNX sessions) in a worker thread, each prompt's
// masks written back as base64 PNG with their scores, and records whose prompts or image cannot be
// read dead-lettered with the reason.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { MaskGenerationPipeline } from '../../../src/pipelines/vision/mask-generation.ts';
import type { MaskGenerationInput } from '../../../src/pipelines/vision/sam-prompts.ts';
import { readDeadLetters, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const SAM = join(import.meta.dirname, '..', '..', 'fixtures', 'models', 'sam-mask-generation');
const dir = scratchDir('sam-route');

describe('maskGeneration through the file route', () => {
  it('masks per prompt as base64 PNG; bad prompts and corrupt images go to the DLQ', async () => {
    const image = async (name: string): Promise<string> =>
      (await readFile(join(SAM, 'images', name))).toString('base64');
    const records = [
      { id: 'a', image: await image('shapes_64x64_rgb.png'), points: [[20, 20]] },
      { id: 'no-prompt', image: await image('shapes_64x64_rgb.png') },
      {
        id: 'b',
        image: await image('gradient_48x40_rgb.png'),
        boxes: [
          [2, 3, 30, 20],
          [20, 10, 47, 39],
        ],
      },
      { id: 'corrupt', image: Buffer.from('no pixels here').toString('base64'), points: [[1, 1]] },
      {
        id: 'bad-labels',
        image: await image('shapes_64x64_rgb.png'),
        points: [[1, 1]],
        labels: [7],
      },
      {
        id: 'c',
        image: await image('tower_30x70_rgb.png'),
        points: [[10, 30]],
        labels: [1],
        boxes: [[5, 20, 25, 50]],
      },
    ];
    const input = dir.file('prompts.jsonl');
    await writeFile(input, records.map((r) => JSON.stringify(r)).join('\n'));
    const config = parseConfigText(
      `
models: { sam: { path: ${JSON.stringify(SAM)} } }
pipelines: { segment: { task: maskGeneration, model: sam, options: { multimaskOutput: false } } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: segment
    input: { field: $ }
    output: { field: prompts }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`,
      {},
    );
    await runToEnd(config);

    const good = records.filter((r) => ['a', 'b', 'c'].includes(r.id));
    const store = new ModelStore();
    const pipeline = new MaskGenerationPipeline(await store.load({ path: SAM }), {
      multimaskOutput: false,
    });
    const expected = await pipeline.run(
      good.map((r) => ({ ...r, image: Buffer.from(r.image, 'base64') }) as MaskGenerationInput),
    );
    await store.close();

    const out = (await readFile(dir.file('out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map(
        (l) => JSON.parse(l) as { id: string; prompts: { masks: string[]; scores: number[] }[] },
      );
    expect(out.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    expect(out.map((r) => r.prompts.length)).toEqual([1, 2, 1]);
    out.forEach((record, i) =>
      record.prompts.forEach((prompt, p) => {
        const want = expected[i]?.[p];
        expect(prompt.scores).toEqual(want?.scores);
        expect(prompt.masks).toHaveLength(1);
        expect(prompt.masks.map((m) => Buffer.from(m, 'base64'))).toEqual(
          want?.masks.map((m) => Buffer.from(m)),
        );
      }),
    );

    const dlq = await readDeadLetters(dir.file('dlq.jsonl'));
    const byId = new Map(dlq.map((d) => [(JSON.parse(d.value) as { id: string }).id, d.headers]));
    expect([...byId.keys()].sort()).toEqual(['bad-labels', 'corrupt', 'no-prompt']);
    expect(byId.get('no-prompt')?.['hugot.error.message']).toContain('needs points or boxes');
    expect(byId.get('bad-labels')?.['hugot.error.message']).toContain('labels must give');
    expect(byId.get('corrupt')?.['hugot.error.code']).toMatch(/IMAGE_INVALID|INPUT_INVALID/);
  });
});
