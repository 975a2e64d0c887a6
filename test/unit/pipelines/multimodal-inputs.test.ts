// What visual and document question answering accept, checked where each check lives: the
// route's shape check (task definitions), the pipelines' own input and option checks, the
// config's route rules, and the pieces Python's behaviour is copied from (str.split, ViLT's size).
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError, ModelFolderError } from '../../../src/errors.ts';
import { DocumentQuestionAnsweringPipeline } from '../../../src/pipelines/multimodal/document-question-answering.ts';
import {
  compileViltPreprocessor,
  viltSize,
} from '../../../src/pipelines/multimodal/vilt-preprocess.ts';
import { VisualQuestionAnsweringPipeline } from '../../../src/pipelines/multimodal/visual-question-answering.ts';
import { pythonSplit } from '../../../src/pipelines/multimodal/word-boxes.ts';
import { readsImageField, readsImages } from '../../../src/pipelines/registry.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import { checkInputShape } from '../../../src/route/input-shape.ts';

const FIXTURES = join(import.meta.dirname, '..', '..', 'fixtures', 'models');
const VILT = join(FIXTURES, 'vilt-visual-question-answering');
const LAYOUTLM = join(FIXTURES, 'layoutlm-document-question-answering');
const IMAGE = join(VILT, 'images', 'shapes_64x64_rgb.png');
const store = new ModelStore();
afterAll(() => store.close());

const limits = { maxTextLength: 20, maxListItems: 3 };
const check = (task: string, input: unknown): void => checkInputShape(task, input, "'req'", limits);
const box = (x0: number, y0: number, x1: number, y1: number): [number, number, number, number] => [
  x0,
  y0,
  x1,
  y1,
];

describe('visualQuestionAnswering inputs', () => {
  it('is the one task whose image sits in a field beside a question', () => {
    expect(readsImageField('visualQuestionAnswering')).toBe(true);
    expect(readsImages('visualQuestionAnswering')).toBe(false);
    expect(readsImageField('documentQuestionAnswering')).toBe(false);
    expect(readsImageField('imageClassification')).toBe(false);
  });

  it("the route's check: an object with an image string or bytes and a question within limits", () => {
    expect(() => check('visualQuestionAnswering', { image: 'aGk=', question: 'q' })).not.toThrow();
    expect(() =>
      check('visualQuestionAnswering', { image: new Uint8Array([1]), question: '' }),
    ).not.toThrow();
    for (const bad of [
      'aGk=',
      { image: 'aGk=' },
      { question: 'q' },
      { image: 42, question: 'q' },
      { image: 'aGk=', question: ['q'] },
    ])
      expect(() => check('visualQuestionAnswering', bad)).toThrow(
        /'req' must be \{image, question\}.* for visualQuestionAnswering/,
      );
    expect(() =>
      check('visualQuestionAnswering', { image: 'aGk=', question: 'x'.repeat(21) }),
    ).toThrow(/'req'\.question is 21 characters, over limits\.maxTextLength/);
  });

  it('the pipeline names the input and the field at fault', async () => {
    const pipeline = new VisualQuestionAnsweringPipeline(await store.load({ path: VILT }));
    await expect(pipeline.run(['not an object' as never])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[0]',
    });
    await expect(
      pipeline.run([{ image: IMAGE, question: 'ok' }, { image: IMAGE } as never]),
    ).rejects.toMatchObject({ field: 'inputs[1].question' });
    await expect(pipeline.run([{ question: 'q' } as never])).rejects.toMatchObject({
      field: 'inputs[0].image',
    });
    await expect(
      pipeline.run([{ image: new Uint8Array([1, 2, 3]), question: 'q' }]),
    ).rejects.toMatchObject({ name: 'InputError', field: 'inputs[0].image' });
  });

  it('refuses a question longer than the model reads unless truncation is asked for', async () => {
    const model = await store.load({ path: VILT });
    const long = { image: IMAGE, question: 'is the circle red '.repeat(20) };
    await expect(new VisualQuestionAnsweringPipeline(model).run([long])).rejects.toThrow(
      /inputs\[0\]\.question is \d+ tokens, over the 64 the model reads; .*options\.truncation: true/,
    );
    const [answers] = await new VisualQuestionAnsweringPipeline(model, { truncation: true }).run([
      long,
    ]);
    expect(answers).toHaveLength(5);
  });

  it('validates options once, naming the field', async () => {
    const model = await store.load({ path: VILT });
    expect(() => new VisualQuestionAnsweringPipeline(model, { topK: 0 })).toThrow(/topK/);
    expect(() => new VisualQuestionAnsweringPipeline(model, { top_k: 2 } as never)).toThrow(
      /top_k/,
    );
  });

  it("sizes images by ViLT's rule: short side to shortest_edge, long side capped, floored to the divisor", () => {
    const p = { shorter: 64, longer: Math.trunc((1333 / 800) * 64), divisor: 16 };
    expect(viltSize(40, 48, p)).toEqual({ height: 64, width: 64 });
    expect(viltSize(40, 100, p)).toEqual({ height: 32, width: 96 });
    expect(viltSize(70, 30, p)).toEqual({ height: 96, width: 32 });
    // dandelin/vilt-b32's own numbers: 384 short side, 639 long side cap, multiples of 32.
    const b32 = { shorter: 384, longer: 639, divisor: 32 };
    expect(viltSize(480, 640, b32)).toEqual({ height: 384, width: 512 });
    expect(viltSize(100, 1000, b32)).toEqual({ height: 64, width: 608 });
    // A thin strip floors to no rows at all (the pipeline then refuses the image).
    expect(viltSize(37, 1001, b32)).toEqual({ height: 0, width: 608 });
  });

  it('reads the processor config and names a bad key', () => {
    const p = compileViltPreprocessor({ image_processor_type: 'ViltImageProcessor' }, 'm');
    expect([p.shorter, p.longer, p.divisor]).toEqual([384, 639, 32]);
    expect(p.base.filter).toBeDefined();
    expect(() => compileViltPreprocessor({ size_divisor: 0 }, 'm')).toThrow(ModelFolderError);
    expect(() => compileViltPreprocessor({ size: { height: 3, width: 3 } }, 'm')).toThrow(
      /size must be \{shortest_edge/,
    );
    expect(() => compileViltPreprocessor(undefined, 'm')).toThrow(/no preprocessor_config/);
  });
});

describe('documentQuestionAnswering inputs', () => {
  const words: [string, [number, number, number, number]][] = [
    ['Total', box(10, 10, 60, 30)],
    ['154.06', box(70, 10, 140, 30)],
  ];

  it("the route's check: a question and [word, box] pairs within the text and list limits", () => {
    const task = 'documentQuestionAnswering';
    expect(() => check(task, { question: 'q', wordBoxes: words })).not.toThrow();
    expect(() => check(task, { question: 'q' })).toThrow(/\{question, wordBoxes\}/);
    expect(() => check(task, { question: 'q', wordBoxes: [...words, ...words] })).toThrow(
      /'req'\.wordBoxes has 4 items, over limits\.maxListItems/,
    );
    expect(() =>
      check(task, { question: 'q', wordBoxes: [['x'.repeat(21), box(0, 0, 1, 1)]] }),
    ).toThrow(/'req'\.wordBoxes\[0\]\[0\] is 21 characters/);
  });

  it('the pipeline refuses missing, malformed and out-of-grid boxes, naming the item', async () => {
    const pipeline = new DocumentQuestionAnsweringPipeline(await store.load({ path: LAYOUTLM }));
    const run = (input: unknown): Promise<unknown> => pipeline.run([input as never]);
    await expect(run({ question: 'q' })).rejects.toThrow(/wordBoxes is missing: .*no OCR/);
    await expect(run({ question: 'q', wordBoxes: [] })).rejects.toMatchObject({
      field: 'inputs[0].wordBoxes',
    });
    await expect(run({ question: ' \t ', wordBoxes: words })).rejects.toThrow(
      /question has no words/,
    );
    await expect(run({ question: 'q', wordBoxes: [['Total']] })).rejects.toMatchObject({
      field: 'inputs[0].wordBoxes[0]',
    });
    for (const bad of [box(0, 0, 1.5, 2), box(-1, 0, 1, 1), box(0, 0, 1024, 5)])
      await expect(run({ question: 'q', wordBoxes: [['w', bad]] })).rejects.toThrow(
        /wordBoxes\[0\]\[1\] must be 4 whole numbers from 0 to 1023/,
      );
    await expect(
      run({ question: 'q', wordBoxes: [words[0], ['w', box(50, 10, 40, 20)]] }),
    ).rejects.toMatchObject({ name: 'InputError', field: 'inputs[0].wordBoxes[1][1]' });
    // An image beside the words is Python's input shape; LayoutLM v1 never reads it.
    const [withImage] = await pipeline.run([
      { question: 'What is the total?', wordBoxes: words, image: 'aGk=' } as never,
    ]);
    const [without] = await pipeline.run([{ question: 'What is the total?', wordBoxes: words }]);
    expect(withImage).toEqual(without);
  });

  it('takes a docStride that leaves room, and refuses one that does not', async () => {
    const model = await store.load({ path: LAYOUTLM });
    const input = { question: 'What is the total?', wordBoxes: words };
    const [answers] = await new DocumentQuestionAnsweringPipeline(model, { topK: 2 }).run([input]);
    expect(answers).toHaveLength(2);
    for (const answer of answers ?? [])
      expect(answer.answer).toBe(
        words
          .slice(answer.start, answer.end + 1)
          .map(([w]) => w)
          .join(' '),
      );
    const tight = new DocumentQuestionAnsweringPipeline(model, { maxSeqLength: 12, docStride: 6 });
    await expect(
      tight.run([{ question: 'What is the total?', wordBoxes: [...words, ...words, ...words] }]),
    ).rejects.toThrow(/documentQuestionAnswering: docStride 6 must be below/);
    expect(
      () => new DocumentQuestionAnsweringPipeline(model, { maxAnswerLen: 3 } as never),
    ).toThrow(/options\.maxAnswerLen: unknown key; did you mean 'maxAnswerLength'/);
  });

  it("splits the question where Python's str.split() does", () => {
    expect(pythonSplit('  What is\tthe\u3000total?\n')).toEqual(['What', 'is', 'the', 'total?']);
    expect(pythonSplit('a\x1cb\x85c')).toEqual(['a', 'b', 'c']);
    // U+FEFF is whitespace to JS's \s, not to Python.
    expect(pythonSplit('a\ufeffb')).toEqual(['a\ufeffb']);
  });
});

describe('route rules for image + question tasks', () => {
  const config = (input: string): unknown =>
    parseConfigText(
      `
models: { vilt: { path: ${JSON.stringify(VILT)} } }
pipelines: { vqa: { task: visualQuestionAnswering, model: vilt } }
routes:
  - source: { type: file, path: /tmp/in.jsonl }
    pipeline: vqa
    input: ${input}
    output: { mode: result }
    sink: { type: file, path: /tmp/out.jsonl }
`,
      {},
    );

  it('reads image paths under a root when asked, and never takes a binary record', () => {
    expect(() => config('{ field: $, images: { from: path, root: /srv/images } }')).not.toThrow();
    expect(() => config('{ format: bytes }')).toThrow(ConfigError);
    expect(() => config('{ format: bytes }')).toThrow(/bytes .* use json or text/);
  });
});
