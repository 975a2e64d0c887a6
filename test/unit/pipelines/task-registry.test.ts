// The registry is the only list of tasks: each definition's input check and cost, asked through
// the route's and the engine's entry points, and the names the factory refuses.
import { describe, expect, it } from 'vitest';
import { inputCost } from '../../../src/engine/input-cost.ts';
import { InputError } from '../../../src/errors.ts';
import {
  readsAudio,
  readsImages,
  TASK_NAMES,
  taskDefinition,
} from '../../../src/pipelines/registry.ts';
import type { TextTokenizer } from '../../../src/pipelines/runtime/text-tokenizer.ts';
import { checkInputShape } from '../../../src/route/input-shape.ts';

const limits = { maxTextLength: 10, maxListItems: 2 };
const check = (task: string, input: unknown): void =>
  checkInputShape(task, input, "'text'", limits);

describe('task registry', () => {
  it('lists every task once, each under its own name', () => {
    expect(TASK_NAMES).toEqual([
      'featureExtraction',
      'textClassification',
      'tokenClassification',
      'zeroShotClassification',
      'crossEncoder',
      'questionAnswering',
      'fillMask',
      'textGeneration',
      'imageClassification',
      'tabular',
      'objectDetection',
      'imageFeatureExtraction',
      'depthEstimation',
      'audioClassification',
      'imageSegmentation',
      'maskGeneration',
      'backgroundRemoval',
      'zeroShotImageClassification',
      'zeroShotObjectDetection',
      'text2textGeneration',
      'summarization',
      'translation',
      'visualQuestionAnswering',
      'documentQuestionAnswering',
      'imageToText',
      'imageTextToText',
      'textToSpeech',
      'textToAudio',
      'automaticSpeechRecognition',
      'tableQuestionAnswering',
    ]);
    for (const name of TASK_NAMES) expect(taskDefinition(name).task).toBe(name);
    expect(TASK_NAMES.filter(readsImages)).toEqual([
      'imageClassification',
      'objectDetection',
      'imageFeatureExtraction',
      'depthEstimation',
      'imageSegmentation',
      'backgroundRemoval',
      'zeroShotImageClassification',
      'zeroShotObjectDetection',
      'imageToText',
    ]);
    expect(TASK_NAMES.filter(readsAudio)).toEqual([
      'audioClassification',
      'automaticSpeechRecognition',
    ]);
    expect(() => taskDefinition('fillmask')).toThrow(/did you mean 'fillMask'\?/);
  });

  it("checks each task's input shape and holds texts and lists to the limits", () => {
    const good: Record<string, unknown[]> = {
      featureExtraction: ['hi'],
      textClassification: ['hi', { text: 'a', textPair: 'b' }],
      tokenClassification: ['hi'],
      zeroShotClassification: ['hi'],
      crossEncoder: [{ query: 'q', documents: ['a', 'b'] }],
      questionAnswering: [{ question: 'q', context: 'c' }],
      fillMask: ['hi'],
      textGeneration: ['hi', [{ role: 'user', content: 'hi' }], { messages: [] }],
      imageClassification: ['aGk=', new Uint8Array([1])],
      tabular: [[5.1, 3.5], { 'petal width (cm)': 0.2 }],
      objectDetection: ['aGk=', new Uint8Array([1])],
      imageFeatureExtraction: ['aGk=', new Uint8Array([1])],
      depthEstimation: ['aGk=', new Uint8Array([1])],
      audioClassification: ['aGk=', new Uint8Array([1])],
      automaticSpeechRecognition: ['aGk=', new Uint8Array([1])],
      visualQuestionAnswering: [{ image: 'aGk=', question: 'q' }],
      maskGeneration: [
        { image: 'aGk=', points: [[1, 2]], labels: [0] },
        { image: new Uint8Array([1]), boxes: [[0, 0, 4, 4]] },
      ],
      documentQuestionAnswering: [{ question: 'q', wordBoxes: [['w', [0, 0, 1, 1]]] }],
      imageToText: ['aGk=', new Uint8Array([1])],
      imageTextToText: [
        { image: 'aGk=', text: '<image> q' },
        { image: 'aGk=', messages: [{ role: 'user', content: [{ type: 'image' }] }] },
      ],
      textToSpeech: ['hi', '', { text: 'hi', speakerEmbeddings: [0.1, -0.2] }],
      textToAudio: ['hi'],
      tableQuestionAnswering: [
        { table: { city: ['Bern'] }, query: 'q' },
        { table: [['city'], ['Lima']], query: ['q', 'r'] },
      ],
    };
    for (const [task, inputs] of Object.entries(good))
      for (const input of inputs) expect(() => check(task, input)).not.toThrow();
    for (const task of TASK_NAMES) expect(() => check(task, 42)).toThrow(InputError);
    expect(() => check('imageClassification', 42)).toThrow(
      /'text' must be an image: .* for imageClassification, got number/,
    );
    expect(() => check('featureExtraction', 'x'.repeat(11))).toThrow(/over limits\.maxTextLength/);
    expect(() => check('crossEncoder', { query: 'q', documents: ['a', 'b', 'c'] })).toThrow(
      /'text'\.documents has 3 items/,
    );
    expect(() => check('textGeneration', [{ role: 'user', content: 'x'.repeat(11) }])).toThrow(
      /'text'\[0\]\.content is 11 characters/,
    );
    expect(() => check('textToSpeech', { text: 'hi', speakerEmbeddings: [1, 2, 3] })).toThrow(
      /'text'\.speakerEmbeddings has 3 items/,
    );
    expect(() => check('textToSpeech', { text: 'hi', speakerEmbeddings: ['1'] })).toThrow(
      /list of finite numbers/,
    );
    // Image bytes are held to the image limits by the route, not to the text limits.
    expect(() => check('imageClassification', 'a'.repeat(100))).not.toThrow();
  });

  it('prices inputs by the task: rows per label, per document, per context window', async () => {
    const tokenizer = {
      maxLength: 64,
      encode: () => Promise.resolve([]),
    } as unknown as TextTokenizer;
    const cost = (task: string, input: unknown, options: Record<string, unknown> = {}) =>
      inputCost(input, { task, tokenizer, options, pricing: 'characters' });
    expect(await cost('zeroShotClassification', 'abcd', { candidateLabels: 'a,b,c' })).toEqual({
      tokens: 11,
      rows: 3,
    });
    expect(await cost('crossEncoder', { query: 'abcd', documents: ['efgh', 'ij'] })).toEqual({
      tokens: 5,
      rows: 2,
    });
    const long = { question: 'abcd', context: 'x'.repeat(400) };
    expect(await cost('questionAnswering', long, { maxSeqLength: 32, docStride: 8 })).toEqual({
      tokens: 32,
      rows: 4,
    });
    expect(await cost('imageClassification', 'aGk=')).toEqual({ tokens: 1, rows: 1 });
    expect(await cost('tabular', [5.1, 3.5, 1.4, 0.2])).toEqual({ tokens: 1, rows: 1 });
    // One row per query on the table.
    expect(
      await cost('tableQuestionAnswering', { table: { a: ['bc', 'de'] }, query: ['f', 'gh'] }),
    ).toMatchObject({ rows: 2 });
    expect(await cost('noSuchTask', 'abcd')).toEqual({ tokens: 1, rows: 1 });
  });
});
