// text2textGeneration, summarization and translation against goldens from Python's generate(),
// called as the removed Python pipelines called it (scripts/models/kit/seq2seq.py): the
// pipelines' outputs one input at a time, and token ids alone and in a right-padded batch; with
// the logits processors checkpoints set (no_repeat_ngram_size, bad_words_ids, suppress_tokens...)
// as options and as generation_config.json keys.
import { describe, expect, it } from 'vitest';
import type { Seq2SeqOptions } from '../../src/pipelines/seq2seq/seq2seq-options.ts';
import {
  Seq2SeqTextPipeline,
  type Seq2SeqTask,
} from '../../src/pipelines/seq2seq/seq2seq-text-pipeline.ts';
import { useGenerationConfigCopies } from './generation-config-copy.ts';
import { readGoldens } from './goldens.ts';
import { forPipeline, GOLDEN, parityCase } from './parity-case.ts';
import { useModelStore } from './store.ts';
import { asPythonRow } from './python-output.ts';

const load = useModelStore();
const loadWith = useGenerationConfigCopies(load);

interface GenerationGolden {
  name: string;
  inputs: string[];
  options: PythonOptions;
  output_ids: number[][];
}

interface PythonOptions {
  max_new_tokens?: number;
  num_beams?: number;
  do_sample?: boolean;
  length_penalty?: number;
  early_stopping?: boolean | 'never';
  repetition_penalty?: number;
  no_repeat_ngram_size?: number;
}

const TASKS: Record<string, Seq2SeqTask> = {
  'text2text-generation': 'text2textGeneration',
  summarization: 'summarization',
  translation: 'translation',
};

function options(python: PythonOptions): Seq2SeqOptions {
  const ours: Seq2SeqOptions = {};
  if (python.max_new_tokens !== undefined) ours.maxNewTokens = python.max_new_tokens;
  if (python.num_beams !== undefined) ours.numBeams = python.num_beams;
  if (python.do_sample !== undefined) ours.doSample = python.do_sample;
  if (python.length_penalty !== undefined) ours.lengthPenalty = python.length_penalty;
  if (python.early_stopping !== undefined) ours.earlyStopping = python.early_stopping;
  if (python.repetition_penalty !== undefined) ours.repetitionPenalty = python.repetition_penalty;
  if (python.no_repeat_ngram_size !== undefined)
    ours.noRepeatNgramSize = python.no_repeat_ngram_size;
  return ours;
}

/** generate()'s rows without the decoder start token and the padding after an ended row. */
function generated(row: readonly number[], eos: number): number[] {
  const ids = row.slice(1);
  const end = ids.indexOf(eos);
  return end < 0 ? ids : ids.slice(0, end + 1);
}

for (const fixture of ['t5-text2text', 'bart-summarization']) {
  const goldens = readGoldens(fixture);
  const extra = goldens as unknown as { generation: GenerationGolden[] };

  for (const [pythonTask, task] of Object.entries(TASKS)) {
    const cases = goldens.pipeline.filter((g) => g.task === pythonTask);
    if (cases.length === 0) continue;
    describe(`${task} (${fixture})`, forPipeline(task), () => {
      for (const golden of cases) {
        parityCase(golden, async ({ call }) => {
          // Cases with generation_config keys run on a folder whose generation_config.json has them.
          const keys = (call as { generation_config?: Record<string, unknown> }).generation_config;
          const pipeline = new Seq2SeqTextPipeline(
            task,
            await loadWith(fixture, keys),
            options(call.options),
          );
          // Python's pipeline runs a list one input at a time (no batch_size).
          const outputs = [];
          for (const input of call.inputs as string[]) {
            const [output] = await pipeline.run([input]);
            outputs.push(asPythonRow(task, output));
          }
          return outputs;
        });
      }
    });
  }

  describe(`text2textGeneration token ids (${fixture})`, forPipeline('text2textGeneration'), () => {
    for (const golden of extra.generation) {
      it(golden.name, GOLDEN, async () => {
        const model = await load(fixture);
        const pipeline = new Seq2SeqTextPipeline(
          'text2textGeneration',
          model,
          options(golden.options),
        );
        const eos = model.config.eosTokenIds[0] ?? -1;
        const ids = await pipeline.generateIds(golden.inputs);
        expect(ids).toEqual(golden.output_ids.map((row) => generated(row, eos)));
      });
    }
  });
}
