// TAPAS table question answering against transformers' pipeline (two tiny random models: with the
// aggregation head and without), each golden alone and all of a model's goldens in one batch, and
// our TypeScript TapasTokenizer encoding against Python's on more tables (numbers, dates, text,
// empty cells, rows dropped and cells trimmed to fit).
import { describe, expect, it } from 'vitest';
import {
  tapasEncoder,
  tapasFeeds,
  TableQuestionAnsweringPipeline,
  type TableQuestionAnsweringInput,
  type TableQuestionAnsweringOptions,
} from '../../src/pipelines/multimodal/table-question-answering.ts';
import { withPreviousAnswer } from '../../src/pipelines/multimodal/tapas-encoding.ts';
import { cellProbabilities, selectedCells } from '../../src/pipelines/multimodal/tapas-answers.ts';
import { floatOutput } from '../../src/pipelines/runtime/tensors.ts';
import {
  normalizeForMatch,
  parseText,
  type NumericValue,
} from '../../src/pipelines/multimodal/tapas-numbers.ts';
import { toTableQuestion } from '../../src/pipelines/multimodal/table-input.ts';
import { readGoldens, type GoldenCase } from './goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';

const MODELS = ['tapas-table-question-answering', 'tapas-table-question-answering-no-aggregation'];
const load = useModelStore();

interface EncodingGolden {
  name: string;
  table: Record<string, string[]>;
  query: string;
  options: { max_length?: number };
  input_ids: number[];
  token_type_ids: number[][];
}

const inputOf = (golden: GoldenCase): TableQuestionAnsweringInput =>
  golden.call.inputs as TableQuestionAnsweringInput;
const optionsOf = (golden: GoldenCase): TableQuestionAnsweringOptions => golden.call.options;

describe('tableQuestionAnswering', forPipeline('tableQuestionAnswering'), () => {
  for (const model of MODELS) {
    const goldens = readGoldens(model);
    describe(model, () => {
      for (const golden of goldens.pipeline) {
        parityCase(golden, async () => {
          const pipeline = new TableQuestionAnsweringPipeline(await load(model), optionsOf(golden));
          const [answer] = await pipeline.run([inputOf(golden)]);
          return answer;
        });
      }

      // Every non-sequential golden in one padded batch: short tables beside the long one.
      it('all goldens in one batch', GOLDEN, async () => {
        const alone = goldens.pipeline.filter((g) => optionsOf(g).sequential !== true);
        const pipeline = new TableQuestionAnsweringPipeline(await load(model));
        const answers = await pipeline.run(alone.map(inputOf));
        expect(answers).toEqual(alone.map((g) => g.output));
      });

      it('the sequential golden batched with other tables', GOLDEN, async () => {
        const sequential = goldens.pipeline.find((g) => optionsOf(g).sequential === true);
        const other = goldens.pipeline[0] as GoldenCase;
        const pipeline = new TableQuestionAnsweringPipeline(await load(model), {
          sequential: true,
        });
        const answers = await pipeline.run([inputOf(other), inputOf(sequential as GoldenCase)]);
        expect(answers).toEqual([other.output, sequential?.output]);
      });

      // The answers alone cannot show it (the tiny models pick the same cells either way): the
      // prev_labels channel each query is fed equals what Python's sequential_inference fed.
      it(
        "feeds each sequential query the previous answer's cells as Python does",
        GOLDEN,
        async () => {
          const golden = goldens.pipeline.find(
            (g) => optionsOf(g).sequential === true,
          ) as GoldenCase & {
            prev_labels: number[][];
          };
          const loaded = await load(model);
          const encoder = tapasEncoder(loaded);
          const { table, queries } = toTableQuestion(inputOf(golden), 'input');
          let previous: Set<string> | undefined;
          const fed: number[][] = [];
          for (const query of queries) {
            const base = await encoder.encode(table, query);
            const encoding = previous === undefined ? base : withPreviousAnswer(base, previous);
            fed.push(encoding.typeIds.map((types) => types[3] as number));
            const outputs = await loaded.session.run(tapasFeeds([encoding], 0));
            previous = selectedCells(
              cellProbabilities(encoding, floatOutput(outputs, 'logits').data),
            );
          }
          expect(fed.map((labels) => labels.filter((l) => l === 1).length)).not.toEqual([0, 0, 0]);
          expect(fed).toEqual(golden.prev_labels);
        },
      );

      // The table given as rows (header first) answers as the dict of columns does.
      it('a table as rows equals the same table as columns', async () => {
        const golden = goldens.pipeline[0] as GoldenCase;
        const { table, query } = inputOf(golden) as {
          table: Record<string, string[]>;
          query: string;
        };
        const header = Object.keys(table);
        const rows = (table[header[0] as string] ?? []).map((_, r) =>
          header.map((h) => table[h]?.[r] as string),
        );
        const pipeline = new TableQuestionAnsweringPipeline(await load(model));
        const [answer] = await pipeline.run([{ table: [header, ...rows], query }]);
        expect(answer).toEqual(golden.output);
      });
    });
  }

  // TapasTokenizer's parse_text on numbers, ordinals, number words, Unicode digits and every date
  // pattern, including the ones it refuses (29 February without a leap year, years past 2016).
  describe("TapasTokenizer's parse_text", () => {
    const cases = (
      readGoldens(MODELS[0] as string) as unknown as {
        parse_text: { text: string; spans: { begin: number; end: number; values: unknown[] }[] }[];
      }
    ).parse_text;
    const plain = (v: NumericValue): unknown =>
      v.kind === 'number'
        ? { number: v.value }
        : { date: [v.date.year ?? null, v.date.month ?? null, v.date.day ?? null] };
    for (const golden of cases) {
      it(golden.text, GOLDEN, () => {
        const spans = parseText(normalizeForMatch(golden.text)).map((s) => ({
          begin: s.begin,
          end: s.end,
          values: s.values.map(plain),
        }));
        expect(spans).toEqual(golden.spans);
      });
    }
  });

  describe("TapasTokenizer's encoding", () => {
    const encodings = (
      readGoldens(MODELS[0] as string) as unknown as { encodings: EncodingGolden[] }
    ).encodings;
    for (const golden of encodings) {
      it(golden.name, GOLDEN, async () => {
        const model = await load(MODELS[0] as string);
        const encoder = tapasEncoder(model, golden.options.max_length);
        const { table, queries } = toTableQuestion(
          { table: golden.table, query: golden.query },
          'input',
        );
        const encoding = await encoder.encode(table, queries[0] as string);
        expect(encoding.ids).toEqual(golden.input_ids);
        expect(encoding.typeIds).toEqual(golden.token_type_ids);
      });
    }
  });
});
