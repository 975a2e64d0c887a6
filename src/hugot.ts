// The library API: register models and pipelines by alias, run inputs through a pipeline, close.
// Everything here runs on whichever thread calls it; the stream worker calls it from worker
// threads so that ONNX Runtime never blocks the main event loop.
import { ClosedError, ConfigError, UnknownPipelineError } from './errors.ts';
import {
  ModelStore,
  type ModelSpec,
  type ModelStoreOptions,
} from './pipelines/runtime/model-store.ts';
import type { Pipeline } from './pipelines/pipeline.ts';
import type { CarriedEncodings } from './pipelines/runtime/carried-encoding.ts';
import { batchSafe } from './pipelines/row-by-row.ts';
import { loadTask } from './pipelines/task-modules.ts';
import { markCompiled } from './options/compiled.ts';

export interface PipelineSpec {
  task: string;
  /** Alias of a registered model. */
  model: string;
  options?: unknown;
}

export interface HugotOptions extends ModelStoreOptions {
  /**
   * The models' runtime options and the pipelines' options arrive compiled (validated, defaults
   * filled) by the main thread, as a shard hands them to its threads: used as they are, never
   * parsed again, so the thread never loads zod (src/options/compiled.ts).
   */
  optionsCompiled?: boolean;
}

export class Hugot {
  private readonly store: ModelStore;
  private readonly optionsCompiled: boolean;
  private readonly modelSpecs = new Map<string, ModelSpec>();
  private readonly pipelines = new Map<string, Pipeline<unknown, unknown>>();
  private closed = false;

  constructor(options: HugotOptions = {}) {
    this.store = new ModelStore(options);
    this.optionsCompiled = options.optionsCompiled === true;
  }

  registerModel(alias: string, spec: ModelSpec): void {
    this.assertOpen();
    if (this.modelSpecs.has(alias))
      throw new ConfigError(`model alias '${alias}' is already registered`, {
        field: `models.${alias}`,
      });
    this.modelSpecs.set(
      alias,
      this.optionsCompiled && spec.runtime !== undefined
        ? { ...spec, runtime: markCompiled(spec.runtime) }
        : spec,
    );
  }

  async registerPipeline(alias: string, spec: PipelineSpec): Promise<Pipeline<unknown, unknown>> {
    this.assertOpen();
    if (this.pipelines.has(alias))
      throw new ConfigError(`pipeline alias '${alias}' is already registered`, {
        field: `pipelines.${alias}`,
      });
    const modelSpec = this.modelSpecs.get(spec.model);
    if (modelSpec === undefined) {
      throw new ConfigError(
        `pipeline '${alias}' uses model '${spec.model}', which is not registered; registered: ${[...this.modelSpecs.keys()].join(', ') || '(none)'}`,
        {
          field: `pipelines.${alias}.model`,
        },
      );
    }
    // Only this task's module: an inference thread then holds no other task's code.
    const definition = await loadTask(spec.task);
    // Before the weights load: a model that does not fit the task would run and write nonsense.
    // A shard's main thread checked it already (options compiled there), and the check's ONNX
    // reader is not worth its memory in every thread.
    if (!this.optionsCompiled) {
      const { checkModelFits } = await import('./models/model-fit.ts');
      await checkModelFits(spec.model, spec.task, definition.needs, modelSpec.path, {
        onnxFile: modelSpec.onnxFile,
        variant: modelSpec.variant,
      });
    }
    const model = await this.store.load(modelSpec);
    const options = spec.options ?? {};
    const pipeline = batchSafe(
      definition.create(model, this.optionsCompiled ? markCompiled(options) : options),
    );
    await pipeline.ready?.();
    this.pipelines.set(alias, pipeline);
    return pipeline;
  }

  aliases(): string[] {
    return [...this.pipelines.keys()];
  }

  pipeline(alias: string): Pipeline<unknown, unknown> {
    this.assertOpen();
    const pipeline = this.pipelines.get(alias);
    if (pipeline === undefined)
      throw UnknownPipelineError.forAlias(alias, [...this.pipelines.keys()]);
    return pipeline;
  }

  /**
   * `encodings`: the inputs' encodings made on the main thread (an engine pricing by tokens), which
   * the model's tokenizer answers from while the batch runs instead of tokenizing again.
   */
  async run<Output = unknown>(
    alias: string,
    inputs: readonly unknown[],
    encodings?: CarriedEncodings,
  ): Promise<Output[]> {
    const pipeline = this.pipeline(alias);
    const release =
      encodings === undefined ? undefined : pipeline.model.tokenizer?.carry(encodings);
    try {
      return (await pipeline.run(inputs)) as Output[];
    } finally {
      release?.();
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.pipelines.clear();
    await this.store.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new ClosedError('this Hugot session is closed; create a new one');
  }
}

/** `sharing` is for a shard's threads: native sessions shared through the shard's table. */
export function createHugot(options: HugotOptions = {}): Hugot {
  return new Hugot(options);
}
