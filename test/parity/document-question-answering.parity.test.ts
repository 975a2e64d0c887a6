import { describe, expect, it } from 'vitest';
import {
  DocumentQuestionAnsweringPipeline,
  windowBoxes,
  type DocumentQuestionAnsweringInput,
  type DocumentQuestionAnsweringOptions,
} from '../../src/pipelines/multimodal/document-question-answering.ts';
import { pythonSplit } from '../../src/pipelines/multimodal/word-boxes.ts';
import { WordPairEncoder } from '../../src/pipelines/multimodal/word-encoding.ts';
import { contextWindows } from '../../src/pipelines/text/qa-windows.ts';
import { compareDeep } from './compare.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODEL = 'layoutlm-document-question-answering';
const load = useModelStore();

interface DocumentGolden extends GoldenCase {
  windows: { input_ids: number[]; token_type_ids: number[]; bbox: number[][] }[];
}
const goldens = readGoldens(MODEL).pipeline as DocumentGolden[];

function inputOf(golden: GoldenCase): DocumentQuestionAnsweringInput {
  const { question, word_boxes: wordBoxes } = golden.call.inputs as {
    question: string;
    word_boxes: DocumentQuestionAnsweringInput['wordBoxes'];
  };
  return { question, wordBoxes };
}

function optionsOf(golden: GoldenCase): DocumentQuestionAnsweringOptions {
  const names = {
    top_k: 'topK',
    max_answer_len: 'maxAnswerLength',
    handle_impossible_answer: 'handleImpossibleAnswer',
    doc_stride: 'docStride',
    max_seq_len: 'maxSeqLength',
  } as const;
  return Object.fromEntries(
    Object.entries(golden.call.options).map(([k, v]) => [names[k as keyof typeof names], v]),
  );
}

describe('documentQuestionAnswering', forPipeline('documentQuestionAnswering'), () => {
  describe('pipeline', () => {
    for (const golden of goldens) {
      parityCase(golden, async () => {
        const pipeline = new DocumentQuestionAnsweringPipeline(
          await load(MODEL),
          optionsOf(golden),
        );
        const [answers] = await pipeline.run([inputOf(golden)]);
        return answers;
      });
    }
  });

  // The windows fed to the model are Python's: token ids, segments and every token's box.
  describe("windows equal the pipeline's", () => {
    for (const golden of goldens) {
      it(golden.name, GOLDEN, async () => {
        const model = await load(MODEL);
        const { question, wordBoxes } = inputOf(golden);
        const encoder = new WordPairEncoder(model.tokenizer?.json ?? '');
        const full = await encoder.encode(
          pythonSplit(question),
          wordBoxes.map(([word]) => word),
        );
        // The pipeline's defaults: the tokenizer's limit, half of it as the stride.
        const maxLength = optionsOf(golden).maxSeqLength ?? model.tokenizer?.maxLength ?? 0;
        const stride = optionsOf(golden).docStride ?? Math.floor(maxLength / 2);
        const windows = contextWindows(full, maxLength, stride, 'inputs[0]');
        const sep = model.tokenizer?.tokenId('[SEP]');
        const boxes = windows.map((w) =>
          windowBoxes(
            w,
            wordBoxes.map(([, box]) => box),
            sep,
          ),
        );
        expect(windows.map((w) => w.ids)).toEqual(golden.windows.map((w) => w.input_ids));
        expect(windows.map((w) => w.typeIds)).toEqual(golden.windows.map((w) => w.token_type_ids));
        expect(boxes).toEqual(golden.windows.map((w) => w.bbox));
      });
    }
  });

  describe('batches', () => {
    // Cases that share options run again together: each keeps Python's answers.
    const groups = new Map<string, DocumentGolden[]>();
    for (const golden of goldens) {
      const key = JSON.stringify(golden.call.options);
      groups.set(key, [...(groups.get(key) ?? []), golden]);
    }
    for (const group of [...groups.values()].filter((g) => g.length > 1)) {
      const first = group[0] as DocumentGolden;
      parityCase(
        {
          name: `${group.map((g) => g.name).join(' + ')} in one batch`,
          task: first.task,
          call: { inputs: group.map((g) => g.call.inputs), options: first.call.options },
          output: group.map((g) => g.output),
        },
        async () => {
          const pipeline = new DocumentQuestionAnsweringPipeline(
            await load(MODEL),
            optionsOf(first),
          );
          return pipeline.run(group.map(inputOf));
        },
        { rerun: true },
      );
    }

    it('gives each document the answers it gets alone, whatever its batch mates', async () => {
      const pipeline = new DocumentQuestionAnsweringPipeline(await load(MODEL), {
        topK: 3,
        handleImpossibleAnswer: true,
      });
      const inputs = goldens.map(inputOf);
      const alone = await Promise.all(
        inputs.map(async (input) => (await pipeline.run([input]))[0]),
      );
      const reversed = (await pipeline.run([...inputs].reverse())).reverse();
      const comparison = compareDeep(reversed, alone, 1e-5);
      expect(comparison.differences).toEqual([]);
      expect(alone.every((answers) => answers?.length === 3)).toBe(true);
    });
  });
});
