// The three text-to-text encoder–decoder tasks: one pipeline (seq2seq-text-pipeline.ts), told
// apart by the Python task whose prefix and settings apply and the name of the output field.
import { generatedText } from '../python-output.ts';
import { textInput, type TaskDefinition } from '../task-definition.ts';
import {
  seq2seqOptionsSchema,
  translationOptionsSchema,
  type Seq2SeqOptions,
} from './seq2seq-options.ts';
import { OUTPUT_FIELD, Seq2SeqTextPipeline, type Seq2SeqTask } from './seq2seq-text-pipeline.ts';

const PYTHON_FIELD = {
  text2textGeneration: 'generated_text',
  summarization: 'summary_text',
  translation: 'translation_text',
} as const satisfies Record<Seq2SeqTask, string>;

function seq2seqTask(
  task: Seq2SeqTask,
  optionsSchema: typeof seq2seqOptionsSchema | typeof translationOptionsSchema,
): TaskDefinition {
  return {
    task,
    ...(task === 'text2textGeneration' ? {} : { aliasOf: 'text2textGeneration' }),
    needs: { tokenizer: true, graphs: 'encoderDecoder' },
    execution: 'cohort',
    optionsSchema,
    create: (model, options) =>
      new Seq2SeqTextPipeline(task, model, options as Seq2SeqOptions, optionsSchema),
    // Python's text2text pipelines answer a bare input with a list of one.
    pythonOutput: (result) => [{ [PYTHON_FIELD[task]]: generatedText(result, OUTPUT_FIELD[task]) }],
    inputKind: 'text',
    ...textInput,
  };
}

export const text2textGenerationTask = seq2seqTask('text2textGeneration', seq2seqOptionsSchema);
export const summarizationTask = seq2seqTask('summarization', seq2seqOptionsSchema);
export const translationTask = seq2seqTask('translation', translationOptionsSchema);
