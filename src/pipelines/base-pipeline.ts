// The skeleton every pipeline shares, as Hugot's BasePipeline gives it: the task name, the loaded
// model, options parsed once by the task's schema, the tokenizer when the task needs one, and
// counters of where a batch's time goes (tokenizing vs ONNX Runtime). A pipeline then writes only
// its own steps in `runBatch`: the empty-batch check, the error wrapping around `session.run` and
// the timings come from here, so per-pipeline constructors stop repeating them.
import type { Tensor } from '../runtime/tensor.ts';
import type {
  OrtSession,
  Feeds,
  LinkedRun,
  ResidentOutputs,
  ResidentRun,
  RunOptions,
} from '../runtime/session.ts';
import type { z } from 'zod';
import { FeedMismatchError, HugotError, InferenceError, OrtStatusError } from '../errors.ts';
import type { LazySchema } from '../options/lazy-schema.ts';
import { parseOptions } from '../options/parse.ts';
import {
  assertBatch,
  requireTokenizer,
  type Pipeline,
  type PipelineStatistics,
} from './pipeline.ts';
import type { LoadedModel } from './runtime/model-store.ts';
import { textFeeds } from './runtime/tensors.ts';
import type {
  EncodeOptions,
  TextInput,
  TextTokenizer,
  TokenizedText,
} from './runtime/text-tokenizer.ts';

export type { PipelineStatistics } from './pipeline.ts';

export interface BaseOptions {
  /** false for tasks that read no text (images, tabular rows); default true. */
  tokenizer?: boolean;
}

export abstract class BasePipeline<Input, Output, Schema extends z.ZodType> implements Pipeline<
  Input,
  Output
> {
  readonly task: string;
  readonly model: LoadedModel;
  protected readonly options: z.output<Schema>;
  private readonly textTokenizer: TextTokenizer | undefined;
  private readonly stats: PipelineStatistics = {
    batches: 0,
    inputs: 0,
    tokenize: { calls: 0, ms: 0 },
    inference: { calls: 0, ms: 0 },
  };

  protected constructor(
    task: string,
    model: LoadedModel,
    schema: LazySchema<Schema>,
    options: unknown,
    { tokenizer = true }: BaseOptions = {},
  ) {
    this.task = task;
    this.model = model;
    this.options = parseOptions(schema, options ?? {}, 'options');
    this.textTokenizer = tokenizer ? requireTokenizer(model, task) : undefined;
  }

  /** A copy of the counters; they keep counting after it is taken. */
  get statistics(): PipelineStatistics {
    const { tokenize, inference } = this.stats;
    return { ...this.stats, tokenize: { ...tokenize }, inference: { ...inference } };
  }

  async run(inputs: readonly Input[]): Promise<Output[]> {
    assertBatch(inputs, this.task);
    const outputs = await this.runBatch(inputs);
    this.stats.batches += 1;
    this.stats.inputs += inputs.length;
    return outputs;
  }

  /** The pipeline's own steps over a batch the base has checked is a non-empty array. */
  protected abstract runBatch(inputs: readonly Input[]): Promise<Output[]>;

  /** The model's tokenizer; only for pipelines built with `tokenizer: true` (the default). */
  protected get tokenizer(): TextTokenizer {
    return this.textTokenizer ?? requireTokenizer(this.model, this.task);
  }

  /** The tokenizer's `encode`, counted. */
  protected async encode(
    texts: readonly TextInput[],
    options: EncodeOptions = {},
  ): Promise<TokenizedText[]> {
    const started = performance.now();
    try {
      return await this.tokenizer.encode(texts, options);
    } finally {
      this.stats.tokenize.calls += 1;
      this.stats.tokenize.ms += performance.now() - started;
    }
  }

  /**
   * One `session.run` of the model (or of another session the model holds), counted. A failure
   * ONNX Runtime raises becomes an InferenceError naming the task; our own typed errors pass.
   */
  protected async infer(
    feeds: Feeds,
    outputNames?: readonly string[],
    session: OrtSession = this.model.session,
    options?: RunOptions,
  ): Promise<Record<string, Tensor>> {
    return this.counted(() => session.run(feeds, outputNames, options));
  }

  /** One counted linked run from the model's main session into `run.next` (a helper graph). */
  protected async inferLinked(run: LinkedRun): Promise<Record<string, Tensor>> {
    return this.counted(() => this.model.session.runLinked(run));
  }

  /** One counted resident run of `session` (runtime.kvOn: device). */
  protected async inferResident(session: OrtSession, run: ResidentRun): Promise<ResidentOutputs> {
    const runResident = session.runResident?.bind(session);
    if (runResident === undefined)
      throw new InferenceError(`${this.task}: this binding keeps no values resident`);
    return this.counted(() => runResident(run));
  }

  private async counted<T>(runs: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await runs();
    } catch (cause) {
      // Our own typed errors pass; a runtime's (either binding's) gets the task's name.
      const fromRuntime = cause instanceof OrtStatusError || cause instanceof FeedMismatchError;
      if (cause instanceof HugotError && !fromRuntime) throw cause;
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw new InferenceError(
        `${this.task}: ONNX Runtime failed: ${reason}`,
        { cause },
        !(cause instanceof HugotError) || cause.retriable,
      );
    } finally {
      this.stats.inference.calls += 1;
      this.stats.inference.ms += performance.now() - started;
    }
  }

  /** One counted run over a tokenized batch, padded with the tokenizer's pad id. */
  protected async inferText(
    encoded: readonly TokenizedText[],
    outputNames?: readonly string[],
    options?: RunOptions,
  ): Promise<Record<string, Tensor>> {
    return this.infer(
      textFeeds(encoded, this.model.inputNames, this.tokenizer.padId),
      outputNames,
      this.model.session,
      options,
    );
  }
}
