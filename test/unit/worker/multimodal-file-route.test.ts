// Image + question records end to end through the file source: JSONL records carrying a base64
// image and a question (visual QA) or words with their boxes (document QA), real fixture models,
// answers merged into each record, and refused records dead-lettered untouched with the reason,
// between good records that keep their order.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { DocumentQuestionAnsweringPipeline } from '../../../src/pipelines/multimodal/document-question-answering.ts';
import { VisualQuestionAnsweringPipeline } from '../../../src/pipelines/multimodal/visual-question-answering.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import {
  type DeadLetter,
  readDeadLetters,
  readJsonl,
  runToEnd,
  scratchDir,
} from '../../helpers/file-route.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const VILT = join(FIXTURES, 'vilt-visual-question-answering');
const LAYOUTLM = join(FIXTURES, 'layoutlm-document-question-answering');
const dir = scratchDir('multimodal-route');

const base64 = async (path: string): Promise<string> => (await readFile(path)).toString('base64');
const WORDS: [string, [number, number, number, number]][] = [
  ['Invoice', [80, 110, 206, 140]],
  ['number:', [226, 110, 352, 140]],
  ['US-001', [372, 110, 480, 140]],
  ['Total', [80, 420, 170, 450]],
  ['154.06', [190, 420, 298, 450]],
];

describe('image + question routes through the file source', () => {
  it('answer per record; corrupt images and malformed records go to the DLQ with the reason', async () => {
    const image = (name: string): Promise<string> => base64(join(VILT, 'images', name));
    const big = await sharp({
      create: { width: 300, height: 200, channels: 3, background: '#808080' },
    })
      .png()
      .toBuffer();
    const vqa = [
      { id: 'a', image: await image('shapes_64x64_rgb.png'), question: 'Which shape is red?' },
      { id: 'corrupt', image: Buffer.from('not an image').toString('base64'), question: 'Why?' },
      { id: 'b', image: await image('stripes_100x40_rgb.png'), question: 'How many stripes?' },
      { id: 'no-question', image: await image('shapes_64x64_rgb.png') },
      { id: 'huge', image: big.toString('base64'), question: 'Too big?' },
      { id: 'c', image: await image('tower_30x70_rgb.png'), question: 'Is it tall?' },
    ];
    const docs = [
      { id: 'd', question: 'What is the invoice number?', wordBoxes: WORDS },
      { id: 'no-boxes', question: 'What is the total?' },
      { id: 'bad-box', question: 'Total?', wordBoxes: [['Total', [90, 10, 80, 20]]] },
      { id: 'e', question: 'What is the total?', wordBoxes: WORDS },
    ];
    const vqaIn = dir.file('questions.jsonl');
    const docIn = dir.file('documents.jsonl');
    await writeFile(vqaIn, vqa.map((r) => JSON.stringify(r)).join('\n'));
    await writeFile(docIn, docs.map((r) => JSON.stringify(r)).join('\n'));
    const out = (name: string): string => JSON.stringify(dir.file(name));
    const config = parseConfigText(
      `
models:
  vilt: { path: ${JSON.stringify(VILT)} }
  layoutlm: { path: ${JSON.stringify(LAYOUTLM)} }
pipelines:
  vqa: { task: visualQuestionAnswering, model: vilt, options: { topK: 2 } }
  docqa: { task: documentQuestionAnswering, model: layoutlm, options: { topK: 2 } }
limits: { maxImagePixels: 50000 }
routes:
  - source: { type: file, path: ${JSON.stringify(vqaIn)} }
    pipeline: vqa
    input: { field: $ }
    output: { field: answers }
    sink: { type: file, path: ${out('answers.jsonl')} }
    dlq: { type: file, path: ${out('answers-dlq.jsonl')} }
  - source: { type: file, path: ${JSON.stringify(docIn)} }
    pipeline: docqa
    input: { field: $ }
    output: { field: answers }
    sink: { type: file, path: ${out('doc-answers.jsonl')} }
    dlq: { type: file, path: ${out('doc-answers-dlq.jsonl')} }
`,
      {},
    );
    await runToEnd(config);

    const store = new ModelStore();
    const vqaPipeline = new VisualQuestionAnsweringPipeline(await store.load({ path: VILT }), {
      topK: 2,
    });
    const good = vqa.filter((r) => ['a', 'b', 'c'].includes(r.id));
    const expected = await vqaPipeline.run(
      good.map((r) => ({ image: Buffer.from(r.image, 'base64'), question: r.question ?? '' })),
    );
    const docPipeline = new DocumentQuestionAnsweringPipeline(
      await store.load({ path: LAYOUTLM }),
      { topK: 2 },
    );
    const expectedDocs = await docPipeline.run([
      { question: 'What is the invoice number?', wordBoxes: WORDS },
      { question: 'What is the total?', wordBoxes: WORDS },
    ]);
    await store.close();

    const answers = await readJsonl(dir.file('answers.jsonl'));
    expect(answers.map((r) => r['id'])).toEqual(['a', 'b', 'c']);
    answers.forEach((record, i) => {
      const found = record['answers'] as { score: number; answer: string }[];
      expect(found.map((a) => a.answer)).toEqual(expected[i]?.map((a) => a.answer));
      found.forEach((a, j) => expect(a.score).toBeCloseTo(expected[i]?.[j]?.score ?? NaN, 6));
      // The record is merged into, not replaced: its image and question are still there.
      expect(record['question']).toBe(good[i]?.question);
    });
    const docAnswers = await readJsonl(dir.file('doc-answers.jsonl'));
    expect(docAnswers.map((r) => r['id'])).toEqual(['d', 'e']);
    docAnswers.forEach((record, i) => {
      const found = record['answers'] as { answer: string; start: number; end: number }[];
      expect(found.map((a) => [a.answer, a.start, a.end])).toEqual(
        expectedDocs[i]?.map((a) => [a.answer, a.start, a.end]),
      );
    });

    const dead = (name: string): Promise<DeadLetter[]> => readDeadLetters(dir.file(name));
    const vqaDead = await dead('answers-dlq.jsonl');
    expect(vqaDead.map((d) => (JSON.parse(d.value) as { id: string }).id)).toEqual([
      'corrupt',
      'no-question',
      'huge',
    ]);
    expect(vqaDead.map((d) => d.headers['hugot.error.code'])).toEqual([
      'IMAGE_INVALID',
      'WRONG_TYPE',
      'IMAGE_TOO_LARGE',
    ]);
    expect(vqaDead[0]?.headers['hugot.error.message']).toMatch(/^'image' is not an image/);
    expect(vqaDead[1]?.headers['hugot.error.message']).toContain('{image, question}');
    expect(vqaDead[2]?.headers['hugot.error.message']).toContain('limits.maxImagePixels');
    // The dead letter is the record as it came, base64 image and all.
    expect(vqaDead[0]?.value).toBe(JSON.stringify(vqa[1]));

    const docDead = await dead('doc-answers-dlq.jsonl');
    expect(docDead.map((d) => (JSON.parse(d.value) as { id: string }).id)).toEqual([
      'no-boxes',
      'bad-box',
    ]);
    expect(docDead[0]?.headers).toMatchObject({
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'WRONG_TYPE',
    });
    // Boxes are checked against the model's grid by the pipeline, on the inference thread.
    expect(docDead[1]?.headers).toMatchObject({
      'hugot.error.stage': 'inference',
      'hugot.error.code': 'INPUT_INVALID',
    });
    expect(docDead[1]?.headers['hugot.error.message']).toContain('x0 <= x1');
  });
});
