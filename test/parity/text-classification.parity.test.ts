import { describe } from 'vitest';
import {
  TextClassificationPipeline,
  type TextClassificationInput,
} from '../../src/pipelines/text/text-classification.ts';
import { readGoldens } from './goldens.ts';
import { asBatch, forPipeline, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODELS = ['bert-text-classification', 'bert-multi-label', 'roberta-text-classification'];
const load = useModelStore();

function toInput(input: unknown): TextClassificationInput {
  if (typeof input === 'string') return input;
  const { text, text_pair } = input as { text: string; text_pair?: string };
  return text_pair === undefined ? text : { text, textPair: text_pair };
}

describe('textClassification', forPipeline('textClassification'), () => {
  for (const modelName of MODELS) {
    describe(modelName, () => {
      for (const golden of readGoldens(modelName).pipeline) {
        parityCase(golden, async ({ call }) => {
          const {
            top_k: topK,
            function_to_apply: functionToApply,
            max_length: maxLength,
          } = call.options as {
            top_k?: number | null;
            function_to_apply?: 'softmax' | 'sigmoid' | 'none';
            max_length?: number;
          };
          const pipeline = new TextClassificationPipeline(await load(modelName), {
            ...(topK !== undefined ? { topK } : {}),
            ...(functionToApply !== undefined ? { functionToApply } : {}),
            ...(maxLength !== undefined ? { maxLength } : {}),
          });
          const outputs = await pipeline.run(asBatch(call.inputs).map(toInput));
          // With the default top_k Python gives a dict per input (a list of them for a batch);
          // with an explicit top_k it gives a list of dicts per input.
          if (!Array.isArray(call.inputs)) return topK === undefined ? outputs[0] : outputs[0];
          return topK === undefined ? outputs.map((o) => o[0]) : outputs;
        });
      }
    });
  }
});
