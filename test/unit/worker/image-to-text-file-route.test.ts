// imageToText through the file source: base64 image fields in JSONL records captioned by the tiny
// VisionEncoderDecoder (the same text as Python's greedy golden), in order, and a corrupt image
// dead-lettered untouched with the stage, code and reason between the good records.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelPath, readGoldens } from '../../parity/goldens.ts';
import { readDeadLetters, readJsonl, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const MODEL = 'vit-gpt2-image-to-text';
const dir = scratchDir('image-to-text-route');

describe('imageToText file route', () => {
  it('captions every good image in order and dead-letters a corrupt one with the reason', async () => {
    const greedy = readGoldens(MODEL).pipeline.find((g) => g.name === 'greedy');
    const inputs = (greedy?.call.inputs ?? []) as string[];
    const expected = (greedy?.output ?? []) as { generated_text: string }[][];
    const good = await Promise.all(
      inputs.slice(0, 3).map(async (image, i) => ({
        id: `img-${i}`,
        image: (await readFile(join(modelPath(MODEL), image))).toString('base64'),
      })),
    );
    const corrupt = {
      id: 'corrupt',
      image: Buffer.from('GIF89a, or so it says').toString('base64'),
    };
    const input = dir.file('images.jsonl');
    await writeFile(
      input,
      [good[0], corrupt, good[1], good[2]].map((r) => JSON.stringify(r)).join('\n'),
    );
    await runToEnd(`
models: { captioner: { path: ${JSON.stringify(modelPath(MODEL))} } }
pipelines:
  caption: { task: imageToText, model: captioner, options: { maxNewTokens: 12, numBeams: 1 } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: caption
    input: { field: image }
    output: { field: caption }
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`);
    const out = await readJsonl(dir.file('out.jsonl'));
    expect(out.map((r) => r['id'])).toEqual(['img-0', 'img-1', 'img-2']);
    // Python's own record for each image, key for key (the route's default output.keys).
    expect(out.map((r) => r['caption'])).toEqual(expected.slice(0, 3));
    const dead = await readDeadLetters(dir.file('dlq.jsonl'));
    expect(dead).toHaveLength(1);
    expect(JSON.parse(dead[0]?.value ?? '{}')).toEqual(corrupt);
    expect(dead[0]?.headers['hugot.error.code']).toBe('IMAGE_INVALID');
    expect(dead[0]?.headers['hugot.error.stage']).toBe('validate');
    expect(dead[0]?.headers['hugot.error.message']).toMatch(/image/i);
  });
});
