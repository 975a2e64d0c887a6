// Image + prompt records through the file source with the tiny Llava fixture: each good record
// answered with Python's generated text (the goldens), in order, and refused records
// dead-lettered untouched with the stage, code and reason.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelPath, readGoldens } from '../../parity/goldens.ts';
import {
  type DeadLetter,
  readDeadLetters,
  readJsonl,
  runToEnd,
  scratchDir,
  writeJsonl,
} from '../../helpers/file-route.ts';

const MODEL = 'llava-image-text-to-text';
const MODEL_PATH = modelPath(MODEL);
const dir = scratchDir('image-text-to-text-route');

interface Case {
  name: string;
  call: { inputs: { image: string } & Record<string, unknown> };
  output: { generated_text: string }[];
}

describe('imageTextToText file route', () => {
  it("answers every good record with Python's text, in order; bad ones go to the DLQ with the reason", async () => {
    const cases = (readGoldens(MODEL).pipeline as unknown as Case[]).filter(
      (c) => !Array.isArray(c.call.inputs),
    );
    const base64 = async (image: string): Promise<string> =>
      (await readFile(join(MODEL_PATH, image))).toString('base64');
    const good = await Promise.all(
      cases.map(async (c, i) => ({
        id: `good-${i}`,
        ...c.call.inputs,
        image: await base64(c.call.inputs.image),
      })),
    );
    const image = good[0]?.image ?? '';
    const bad = [
      { id: 'corrupt', image: Buffer.from('not an image').toString('base64'), text: '<image> hi' },
      { id: 'no-prompt', image },
      { id: 'two-placeholders', image, text: '<image> and <image>' },
      { id: 'bad-part', image, messages: [{ role: 'user', content: [{ type: 'video' }] }] },
    ];
    const records = [...good];
    // Among the good records, so each bad one would share a batch with good ones.
    bad.forEach((r, i) => records.splice(1 + i * 2, 0, r as (typeof good)[number]));
    const input = dir.file('prompts.jsonl');
    await writeJsonl(input, records);
    await runToEnd(`
models: { llava: { path: ${JSON.stringify(MODEL_PATH)} } }
pipelines:
  describe: { task: imageTextToText, model: llava, options: { maxNewTokens: 12, doSample: false } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: describe
    input: { field: $ }
    output: { field: answer, returnFullText: false } # as the goldens were made
    sink: { type: file, path: ${dir.quoted('out.jsonl')} }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
`);

    const out = await readJsonl<{ id: string; answer: unknown }>(dir.file('out.jsonl'));
    expect(out.map((r) => r.id)).toEqual(good.map((r) => r.id));
    // Python's record, key for key: [{input_text, generated_text}]. Python's chat carries the
    // image inside its image part (`url`); a record carries it beside, in `image`.
    const withoutUrls = (output: unknown): unknown =>
      JSON.parse(JSON.stringify(output), (key, value: unknown) =>
        key === 'url' ? undefined : value,
      );
    expect(out.map((r) => r.answer)).toEqual(cases.map((c) => withoutUrls(c.output)));

    const dlq: DeadLetter[] = await readDeadLetters(dir.file('dlq.jsonl'));
    const byId = new Map(dlq.map((d) => [(JSON.parse(d.value) as { id: string }).id, d]));
    expect([...byId.keys()].sort()).toEqual(bad.map((r) => r.id).sort());
    expect(byId.get('corrupt')?.headers).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'IMAGE_INVALID',
    });
    expect(byId.get('corrupt')?.headers['hugot.error.message']).toMatch(/is not an image/);
    // The dead letter is the record as it came, base64 image and all.
    expect(byId.get('corrupt')?.value).toBe(JSON.stringify(bad[0]));
    expect(byId.get('no-prompt')?.headers).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'WRONG_TYPE',
    });
    expect(byId.get('no-prompt')?.headers['hugot.error.message']).toContain('{image, messages}');
    // The placeholder count and the content parts are the pipeline's to check.
    expect(byId.get('two-placeholders')?.headers).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(byId.get('two-placeholders')?.headers['hugot.error.message']).toContain('exactly once');
    expect(byId.get('bad-part')?.headers['hugot.error.message']).toContain(
      "{type: 'image'} or {type: 'text', text}",
    );
  });
});
