import { describe, expect, it } from 'vitest';
import {
  QuestionAnsweringPipeline,
  type QuestionAnsweringInput,
  type QuestionAnsweringOptions,
} from '../../src/pipelines/text/question-answering.ts';
import { contextWindows } from '../../src/pipelines/text/qa-windows.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { asBatch, forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'bert-question-answering';
const load = useModelStore();

function toOptions(options: Record<string, unknown>): QuestionAnsweringOptions {
  const names = {
    top_k: 'topK',
    max_answer_len: 'maxAnswerLength',
    handle_impossible_answer: 'handleImpossibleAnswer',
    doc_stride: 'docStride',
    max_seq_len: 'maxSeqLength',
    max_question_len: 'maxQuestionLength',
  } as const;
  return Object.fromEntries(
    Object.entries(options).map(([key, value]) => [names[key as keyof typeof names], value]),
  );
}

describe('questionAnswering', forPipeline('questionAnswering'), () => {
  describe(MODEL, () => {
    const goldens = readGoldens(MODEL).pipeline;
    for (const golden of goldens) {
      parityCase(golden, async ({ call }) => {
        const pipeline = new QuestionAnsweringPipeline(await load(MODEL), toOptions(call.options));
        const outputs = await pipeline.run(asBatch(call.inputs) as QuestionAnsweringInput[]);
        // The reference returns a list of answers for one input.
        return Array.isArray(call.inputs) ? outputs : outputs[0];
      });
    }

    // The windows fed to the model are Python's, token for token.
    for (const golden of goldens) {
      it(`${golden.name} windows equal Python's`, GOLDEN, async () => {
        const model = await load(MODEL);
        const { question, context } = golden.call.inputs as QuestionAnsweringInput;
        const options = toOptions(golden.call.options);
        const maxLength = options.maxSeqLength ?? model.tokenizer?.maxLength ?? 0;
        const stride = Math.min(options.docStride ?? 128, Math.floor(maxLength / 2));
        const [full] = (await model.tokenizer?.encode([[question, context]], {
          truncation: false,
        })) ?? [undefined];
        if (full === undefined) throw new Error('no tokenizer');
        const windows = contextWindows(full, maxLength, stride, 'inputs[0]');
        const raw = (golden as GoldenCase & { raw: { input_ids: number[] }[] }).raw;
        // Python pads the windows of one input to the longest; ours are unpadded.
        const padId = model.tokenizer?.padId;
        const unpadded = raw.map(({ input_ids: ids }) => {
          let end = ids.length;
          while (end > 0 && ids[end - 1] === padId) end -= 1;
          return ids.slice(0, end);
        });
        expect(windows.map((w) => w.ids)).toEqual(unpadded);
      });
    }

    // Every case again inside one mixed-length batch: each input must answer as it does alone.
    for (const golden of goldens) {
      parityCase(
        { ...golden, name: `${golden.name} in a batch` },
        async ({ call }) => {
          const pipeline = new QuestionAnsweringPipeline(
            await load(MODEL),
            toOptions(call.options),
          );
          const others = goldens.map((g) => g.call.inputs as QuestionAnsweringInput);
          const outputs = await pipeline.run([...others, call.inputs as QuestionAnsweringInput]);
          return outputs[outputs.length - 1];
        },
        { rerun: true },
      );
    }
  });
});
