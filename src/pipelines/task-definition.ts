// What the worker knows about a task, in one object per task file: its options, the pipeline it
// builds, the input a record must carry, and how much of a batch that input takes. The registry
// (registry.ts) lists the definitions; the config schema, the route's input check, the engine's
// batch pricing and the pipeline factory all look tasks up there.
import type { z } from 'zod';
import type { ModelNeeds, OutputNeed } from '../models/task-fit.ts';
import type { LoadedModel } from './runtime/model-store.ts';
import type { Pipeline } from './pipeline.ts';

/** The route's side of an input check: the record's limits and how to refuse it. */
export interface InputCheck {
  /** How messages name the input: `'text'` (a JSON field) or `the record`. */
  readonly field: string;
  /** Refuses the input: `<field> must be <expected> for <task>, got <what it is>`. */
  fail(expected: string): never;
  /** Holds a text to limits.maxTextLength; `at` names it in the message (default: the field). */
  text(value: string, at?: string): void;
  /** Holds a list to limits.maxListItems. */
  list(values: readonly unknown[], at: string): void;
}

/** The engine's side of pricing an input. */
export interface CostMeter {
  /** Tokens of a text, or of a text pair, as the batching's pricing counts them, capped at the model's length. */
  length(text: string, pair?: string): Promise<number>;
  /** The longest row the model runs, in tokens. */
  readonly maxTokens: number;
  /** The pipeline's options as declared (plus what costOptions added). */
  readonly options: Record<string, unknown>;
}

export interface InputCost {
  /** Tokens of the input's longest row. */
  tokens: number;
  /** Rows the input makes in a batch. */
  rows: number;
}

/** The call a Python output is shaped for: the record's input and the pipeline's options. */
export interface PythonCall {
  readonly input: unknown;
  readonly options: Record<string, unknown>;
  /** Python's return_full_text for generated text: the prompt before the new text (route output). */
  readonly returnFullText: boolean;
}

/**
 * 'image' / 'audio': a route reads the input as an image's or an audio file's bytes
 * (docs/security.md#image-inputs, #audio-inputs). 'imageText': the input is an object whose
 * `image` a route reads as an image, its other fields checked by inputSchema. 'text': the route
 * hands the input on as parsed, checked by inputSchema alone.
 */
export type InputKind = 'text' | 'image' | 'audio' | 'imageText';

/**
 * 'batch': the batch engine only. The others may also opt in to a generative engine (a
 * pipeline's `generative` block), each kind with its own step loop, because each decodes
 * differently: 'decoderOnly' grows one sequence per request over a shared KV batch
 * (src/generative/generation-loop.ts), and its pipeline options are every request's generation
 * defaults; 'cohort' runs an encoder once per cohort of requests, then decodes them stepwise
 * (cohort-loop.ts); 'segment' yields its output final a segment at a time (segment-loop.ts).
 */
export type ExecutionKind = 'batch' | 'decoderOnly' | 'cohort' | 'segment';

export interface TaskDefinition {
  /** The name configs and the library API use. */
  readonly task: string;
  /**
   * The task whose pipeline this one is under another name (Python's `text-to-audio` is its
   * `text-to-speech`; summarization and translation are text2text generation with their own
   * prefix). The parity report counts pipelines by implementation, so an alias is not a second
   * pipeline proven.
   */
  readonly aliasOf?: string;
  /** Validated when the config is loaded and again by the pipeline it configures. */
  readonly optionsSchema: z.ZodType;
  /** Builds the pipeline on an inference thread; the options are those optionsSchema accepts. */
  readonly create: (model: LoadedModel, options: unknown) => Pipeline<unknown, unknown>;
  /** What a record must hold, checked before it joins a batch so it cannot fail its batch mates. */
  readonly inputSchema: (input: unknown, check: InputCheck) => void;
  /** What a route reads the input as (InputKind). */
  readonly inputKind: InputKind;
  /**
   * What the model folder must declare for this task (files, id2label, the main graph's inputs
   * and outputs, which graphs): checked at start-up and by validate-config, so a model that does
   * not fit is a ConfigError before anything runs (src/models/task-fit.ts).
   */
  readonly needs: ModelNeeds;
  /** Which engine may run the pipeline, and with which step loop (ExecutionKind). */
  readonly execution: ExecutionKind;
  /** How much of a batch an input takes; asked only of models with a tokenizer. */
  readonly cost: (input: unknown, meter: CostMeter) => Promise<InputCost>;
  /**
   * The one text the pipeline encodes for this input, when it makes exactly one plain encode of a
   * single text (truncated at its priced length, special tokens added, no stride); undefined for
   * any other input. Priced by tokens, the engine encodes that text on the main thread and the
   * batch carries the encoding to the thread, which does not tokenize it again
   * (src/pipelines/runtime/carried-encoding.ts). The options are the ones cost sees.
   */
  readonly encodedText?: (input: unknown, options: Record<string, unknown>) => string | undefined;
  /** Where the pipeline truncates below the tokenizer's limit, by its options. */
  readonly truncatesAt?: (options: Record<string, unknown>) => number | undefined;
  /**
   * The pipeline truncates its one text at a token cap with these options, so a route may cut a
   * text over limits.maxTextLength at a word instead of refusing it (src/route/long-text.ts).
   */
  readonly cutsLongText?: (options: Record<string, unknown>) => boolean;
  /**
   * What Python's pipeline (or sentence-transformers) returns for this one input, made from
   * ours: the route's default output (output.keys: python, src/route/output-keys.ts). Absent
   * where ours already is Python's. `result` is the pipeline's, or the generative engine's final
   * value (its text under `text`), before bytes become base64.
   */
  readonly pythonOutput?: (result: unknown, call: PythonCall) => unknown;
  /**
   * Set for tasks whose results are embedding vectors (Float32Arrays) a route may write compactly
   * (output.vectors, src/route/vector-encoding.ts): the vectors' length by the model folder's
   * config.json and the pipeline's options, or undefined where they do not say.
   */
  readonly vectorSize?: (
    modelConfig: Record<string, unknown>,
    options: Record<string, unknown>,
  ) => number | undefined;
  /** Options the model folder settles that the pricing must see (featureExtraction's max_seq_length). */
  readonly costOptions?: (
    declared: Record<string, unknown>,
    folder: string,
  ) => Promise<Record<string, unknown>>;
}

/** The model's `logits` (else its first output, as logitsOf reads it) of this rank. */
export function logitsNeed(rank: number, what: string): OutputNeed {
  return { names: ['logits'], orFirst: true, rank, what };
}

/** Question answering's two outputs, read by name. */
export const SPAN_LOGITS: readonly OutputNeed[] = [
  { names: ['start_logits'], rank: 2, what: 'answer start logits [batch, tokens]' },
  { names: ['end_logits'], rank: 2, what: 'answer end logits [batch, tokens]' },
];

/** An input that takes one row of one token: no tokenizer, or a shape the pipeline will refuse. */
export const UNIT_COST: InputCost = { tokens: 1, rows: 1 };

/** One string per record, priced by its tokens. */
export const textInput = {
  inputSchema: (input: unknown, check: InputCheck): void => {
    if (typeof input !== 'string') check.fail('a string');
    check.text(input);
  },
  cost: async (input: unknown, meter: CostMeter): Promise<InputCost> =>
    typeof input === 'string' ? { tokens: await meter.length(input), rows: 1 } : UNIT_COST,
} satisfies Pick<TaskDefinition, 'inputSchema' | 'cost'>;

/** truncatesAt for a pipeline whose `maxLength` option sets its truncation length. */
export const truncatesAtMaxLength = (options: Record<string, unknown>): number | undefined =>
  typeof options['maxLength'] === 'number' ? options['maxLength'] : undefined;

/** The first of `keys` that holds a positive integer in `config` (config.json's hidden size). */
export function sizeIn(
  config: Record<string, unknown>,
  keys: readonly string[],
): number | undefined {
  for (const key of keys) {
    const value = config[key];
    if (typeof value === 'number' && Number.isInteger(value) && value > 0) return value;
  }
  return undefined;
}

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * An input a route reads as a file's bytes and checks itself against its own limits, not the
 * text ones (src/route/image-input.ts, audio-input.ts); one batch row whatever its size.
 */
export function fileInput(
  inputKind: 'image' | 'audio',
  expected: string,
): Pick<TaskDefinition, 'inputSchema' | 'inputKind' | 'cost'> {
  return {
    inputSchema(input, check) {
      if (typeof input !== 'string' && !(input instanceof Uint8Array)) check.fail(expected);
    },
    inputKind,
    cost: () => Promise.resolve(UNIT_COST),
  };
}
