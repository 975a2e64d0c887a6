// The text-in, text-out encoder–decoder pipelines (text2textGeneration, summarization,
// translation), as Python's Text2TextGenerationPipeline and its two subclasses: the task's prefix
// before each text, the batch encoded once (right-padded), then greedy decoding, sampling or beam
// search over the decoder, and the output decoded without special tokens under the task's name
// (`generatedText`, `summaryText`, `translationText`).
import type { z } from 'zod';
import { InputError } from '../../errors.ts';
import { parseWithSchema } from '../../options/parse.ts';
import { BasePipeline } from '../base-pipeline.ts';
import { assertString } from '../pipeline.ts';
import type { LoadedModel } from '../runtime/model-store.ts';
import { textFeeds, type Feeds } from '../runtime/tensors.ts';
import type { TokenizedText } from '../runtime/text-tokenizer.ts';
import { beamSearch } from './beam-search.ts';
import type { GenerationCohort, StepwiseGenerator } from '../generation/stepwise.ts';
import { assertStepwiseSettings, seq2seqCohort } from './seq2seq-cohort.ts';
import { greedySearch } from './greedy-search.ts';
import {
  resolveSeq2SeqDefaults,
  translationOptionsSchema,
  type Seq2SeqDefaults,
  type Seq2SeqOptions,
} from './seq2seq-options.ts';
import {
  runEncoder,
  Seq2SeqDecoder,
  residentDecodingOf,
  type ResidentDecoding,
  seq2seqLayoutOf,
  type RunSession,
  type Seq2SeqLayout,
} from './seq2seq-model.ts';
import { readySchema } from '../../options/lazy-schema.ts';

export type Seq2SeqTask = 'text2textGeneration' | 'summarization' | 'translation';

/** The output field of each task, Python's `<return_name>_text` in camelCase. */
export const OUTPUT_FIELD = {
  text2textGeneration: 'generatedText',
  summarization: 'summaryText',
  translation: 'translationText',
} as const satisfies Record<Seq2SeqTask, string>;

/** Python's name of each task's pipeline, whose task_specific_params apply. */
const PYTHON_TASK = {
  text2textGeneration: 'text2text-generation',
  summarization: 'summarization',
  translation: 'translation',
} as const satisfies Record<Seq2SeqTask, string>;

export type Seq2SeqOutput = Partial<Record<(typeof OUTPUT_FIELD)[Seq2SeqTask], string>>;

export class Seq2SeqTextPipeline
  extends BasePipeline<string, Seq2SeqOutput, typeof translationOptionsSchema>
  implements StepwiseGenerator<TokenizedText>
{
  readonly layout: Seq2SeqLayout;
  private readonly field: (typeof OUTPUT_FIELD)[Seq2SeqTask];
  private readonly pythonTask: string;
  private defaults: Promise<Seq2SeqDefaults> | undefined;

  constructor(
    task: Seq2SeqTask,
    model: LoadedModel,
    options: Seq2SeqOptions = {},
    schema: z.ZodType = translationOptionsSchema,
  ) {
    // Each task validates with its own schema (no srcLang outside translation) before the shared one.
    parseWithSchema(schema, options ?? {}, 'options');
    // A copy, so that the shared schema fills its own defaults even into options compiled by the
    // task's (src/options/compiled.ts: spreading drops the mark).
    super(task, model, readySchema(translationOptionsSchema), { ...options });
    this.layout = seq2seqLayoutOf(model);
    this.field = OUTPUT_FIELD[task];
    this.pythonTask = PYTHON_TASK[task];
  }

  /** The prefix and generation settings, resolved once from the model folder. */
  resolved(): Promise<Seq2SeqDefaults> {
    this.defaults ??= resolveSeq2SeqDefaults(this.model, this.task, this.pythonTask, this.options);
    return this.defaults;
  }

  async ready(): Promise<void> {
    await this.resolved();
  }

  /** The encoder's token ids of each input, as Python's pipeline tokenizes them. */
  async encodeInputs(inputs: readonly string[]): Promise<TokenizedText[]> {
    const { prefix } = await this.resolved();
    const limit = this.model.config.maxPositionEmbeddings;
    const cut = this.tokenizer.maxLength ?? limit;
    // Python's pipeline tokenizes with truncation=False unless asked (DO_NOT_TRUNCATE).
    const encoded = await this.encode(
      inputs.map((text) => prefix + text),
      this.options.truncation && cut !== undefined ? { maxLength: cut } : { truncation: false },
    );
    encoded.forEach((e, i) => {
      if (limit !== undefined && e.ids.length > limit) {
        throw new InputError(
          `${this.task}: inputs[${i}] is ${e.ids.length} tokens and the model reads at most ` +
            `${limit}; shorten it, or set the pipeline option truncation: true to cut it`,
          { field: 'input' },
        );
      }
    });
    return encoded;
  }

  /** Generated token ids of each input (EOS included when it ended on one). */
  async generateIds(inputs: readonly string[]): Promise<number[][]> {
    const { settings } = await this.resolved();
    const encoded = await this.encodeInputs(inputs);
    const encoderIds = encoded.map((e) => e.ids);
    const decoder = await this.startDecoder(encoded);
    try {
      if (settings.numBeams > 1) return await beamSearch(decoder, settings, {}, encoderIds);
      const decode = (ids: readonly number[]): Promise<string> => this.decodeText(ids);
      const results = await greedySearch(decoder, settings, decode, undefined, encoderIds);
      return results.map((r) => r.tokenIds);
    } finally {
      decoder.release();
    }
  }

  protected async runBatch(inputs: readonly string[]): Promise<Seq2SeqOutput[]> {
    inputs.forEach((input, i) => assertString(input, this.task, `inputs[${i}]`));
    const { settings } = await this.resolved();
    const encoded = await this.encodeInputs(inputs);
    const encoderIds = encoded.map((e) => e.ids);
    const decoder = await this.startDecoder(encoded);
    try {
      if (settings.numBeams > 1) {
        const ids = await beamSearch(decoder, settings, {}, encoderIds);
        return await Promise.all(
          ids.map(async (row) => ({ [this.field]: await this.decodeText(row) })),
        );
      }
      const decode = (ids: readonly number[]): Promise<string> => this.decodeText(ids);
      const results = await greedySearch(decoder, settings, decode, undefined, encoderIds);
      return results.map((r) => ({ [this.field]: r.text }));
    } finally {
      decoder.release();
    }
  }

  /** Python's postprocess: skip_special_tokens=True, clean_up_tokenization_spaces=False. */
  decodeText(ids: readonly number[]): Promise<string> {
    return this.tokenizer.decode(ids, true);
  }

  async assertStepwise(): Promise<void> {
    await this.ready();
    assertStepwiseSettings(this.task, (await this.resolved()).settings);
  }

  /** One request's text for the generative engine (stepwise.ts). */
  async prepareInput(input: unknown): Promise<TokenizedText> {
    assertString(input, this.task, 'input');
    const [encoded] = await this.encodeInputs([input]);
    if (encoded === undefined) throw new InputError(`${this.task}: nothing to encode`);
    return encoded;
  }

  async startCohort(encoded: readonly TokenizedText[]): Promise<GenerationCohort> {
    const { settings } = await this.resolved();
    const lengths = encoded.map((e) => e.ids.length);
    const ids = encoded.map((e) => e.ids);
    return seq2seqCohort(await this.startDecoder(encoded), settings, lengths, ids);
  }

  encoderIds(encoded: TokenizedText): readonly number[] {
    return encoded.ids;
  }

  /** Runs the encoder over encoded inputs; the decoder is ready for its first step. */
  async startDecoder(encoded: readonly TokenizedText[]): Promise<Seq2SeqDecoder> {
    const run: RunSession = (session, feeds, outputNames) =>
      this.infer(feeds, outputNames, session);
    const feeds: Feeds = textFeeds(encoded, this.layout.encoder.inputNames, this.tokenizer.padId);
    return new Seq2SeqDecoder(
      this.layout,
      await runEncoder(this.layout, feeds, run),
      run,
      this.residentDecoding(),
    );
  }

  /** Resident caches when the model's runtime keeps them on its device (runtime.kvOn). */
  private residentDecoding(): ResidentDecoding | undefined {
    return residentDecodingOf(this.model, this.layout, (session, run) =>
      this.inferResident(session, run),
    );
  }
}
