import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, InputError } from '../../../src/errors.ts';
import { ModelStore } from '../../../src/pipelines/runtime/model-store.ts';
import {
  QuestionAnsweringPipeline,
  type QuestionAnsweringInput,
} from '../../../src/pipelines/text/question-answering.ts';
import { modelPath } from '../../parity/goldens.ts';

const store = new ModelStore();
afterAll(() => store.close());
const pipeline = async (options = {}) =>
  new QuestionAnsweringPipeline(
    await store.load({ path: modelPath('bert-question-answering') }),
    options,
  );

describe('questionAnswering inputs', () => {
  it('names the field of a malformed input', async () => {
    const qa = await pipeline();
    const bad = [{ question: 'Who?', context: 'Ann.' }, { question: 'Who?' }];
    await expect(qa.run(bad as QuestionAnsweringInput[])).rejects.toMatchObject({
      name: 'InputError',
      field: 'inputs[1].context',
    });
    await expect(qa.run([{ question: '', context: 'Ann.' }])).rejects.toBeInstanceOf(InputError);
    await expect(qa.run([])).rejects.toBeInstanceOf(InputError);
  });

  it('refuses a question that leaves no room for the context', async () => {
    const qa = await pipeline({ maxSeqLength: 8 });
    const input = {
      question: 'Who flew to Berlin on Monday?',
      context: 'John flew there. '.repeat(5),
    };
    await expect(qa.run([input])).rejects.toMatchObject({ field: 'inputs[0].question' });
  });

  it('rejects unknown and invalid options', async () => {
    await expect(pipeline({ top_k: 2 })).rejects.toBeInstanceOf(ConfigError);
    await expect(pipeline({ maxAnswerLength: 0 })).rejects.toBeInstanceOf(ConfigError);
  });

  it('answers with code-point offsets into the context', async () => {
    const qa = await pipeline({ topK: 5 });
    const context = '🍮🍮 Ann flew to Berlin.';
    const [answers = []] = await qa.run([{ question: 'Who flew?', context }]);
    // Five spans fit this context, and all of them lie after the two emoji (two UTF-16 units
    // each), so an offset counted in UTF-16 units would pick different characters.
    expect(answers).toHaveLength(5);
    for (const { start, end, answer } of answers) {
      expect(start).toBeGreaterThanOrEqual(3);
      expect(answer).not.toBe('');
      expect(answer).toBe([...context].slice(start, end).join(''));
    }
  });
});
