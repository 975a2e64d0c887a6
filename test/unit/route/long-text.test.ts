// A text over limits.maxTextLength for a pipeline that truncates anyway: cut at a word, and the
// model's answer is the one it gives for the whole text.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { createHugot } from '../../../src/hugot.ts';
import type { LabelScore } from '../../../src/pipelines/text/text-classification.ts';
import { WORDS_KEPT_AT_LEAST, cutLongText, wordsAtLeast } from '../../../src/route/long-text.ts';
import { readDeadLetters, runToEnd, scratchDir } from '../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-text-classification');
const NER_MODEL = join(ROOT, 'test', 'fixtures', 'models', 'bert-token-classification');
const dir = scratchDir('long-text');

/** Real e-mail text, repeated past `characters`. */
async function longText(characters: number): Promise<string> {
  const texts = (await readFile(join(ROOT, 'test', 'fixtures', 'corpus', 'sample.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => (JSON.parse(l) as { text: string }).text.replace(/\s+/g, ' '));
  let text = '';
  for (let i = 0; text.length <= characters; i += 1) text += `${texts[i % texts.length]} `;
  return text;
}

describe('long texts', () => {
  it('cuts at a space within the limit only when the kept part holds enough words', () => {
    const words = Array.from({ length: WORDS_KEPT_AT_LEAST + 100 }, (_, i) => `w${i}`).join(' ');
    const kept = cutLongText(words, words.length - 10);
    expect(kept).toBeDefined();
    expect(words.startsWith(`${kept} `)).toBe(true);
    expect(kept?.length).toBeLessThanOrEqual(words.length - 10);
    expect(cutLongText(words, words.length)).toBeUndefined(); // not over the limit
    // One run of letters has no word to cut at; too few words cannot hide the cut.
    expect(cutLongText('x'.repeat(50_000), 40_000)).toBeUndefined();
    expect(cutLongText(`${'abcdefghij '.repeat(5000)}`, 40_000)).toBeUndefined();
    expect(wordsAtLeast(' a  b\tc\n', 3)).toBe(true);
    expect(wordsAtLeast(' a  b\tc\n', 4)).toBe(false);
  });

  it('a file route cuts an over-limit text for textClassification and gives the whole text’s labels; a task that does not truncate refuses it', async () => {
    const text = await longText(150_000);
    const unbroken = 'x'.repeat(120_000);
    const input = dir.file('in.jsonl');
    await writeFile(
      input,
      [
        { id: 'long', text },
        { id: 'short', text: 'a short one' },
        { id: 'unbroken', text: unbroken },
      ]
        .map((r) => JSON.stringify(r))
        .join('\n'),
    );
    const config = (task: string, out: string, model = MODEL) =>
      parseConfigText(
        `
models: { m: { path: ${JSON.stringify(model)} } }
pipelines: { p: { task: ${task}, model: m } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: p
    output: { field: result }
    sink: { type: file, path: ${dir.quoted(`${out}-out.jsonl`)} }
    dlq: { type: file, path: ${dir.quoted(`${out}-dlq.jsonl`)} }
`,
        {},
      );
    const worker = await runToEnd(config('textClassification', 'classify'));
    expect(worker.counters()['route-0']).toMatchObject({
      written: 2,
      deadLettered: 1,
      truncated: 1,
    });
    const out = (await readFile(dir.file('classify-out.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string; text: string; result: LabelScore[] });
    expect(out.map((r) => r.id)).toEqual(['long', 'short']);
    expect(out[0]?.text).toBe(text); // the record keeps its whole text; only the model input is cut
    const dead = await readDeadLetters(dir.file('classify-dlq.jsonl'));
    expect(dead.map((d) => d.headers['hugot.error.code'])).toEqual(['TOO_LARGE']);

    const hugot = createHugot();
    hugot.registerModel('m', { path: MODEL });
    await hugot.registerPipeline('p', { task: 'textClassification', model: 'm' });
    const [whole] = await hugot.run<LabelScore[]>('p', [text]);
    await hugot.close();
    expect(out[0]?.result.map((l) => l.label)).toEqual(whole?.map((l) => l.label));
    out[0]?.result.forEach((l, i) => expect(l.score).toBeCloseTo(whole?.[i]?.score ?? NaN, 6));

    const tokens = await runToEnd(config('tokenClassification', 'entities', NER_MODEL));
    expect(tokens.counters()['route-0']).toMatchObject({
      written: 1,
      deadLettered: 2,
      truncated: 0,
    });
  });
});
