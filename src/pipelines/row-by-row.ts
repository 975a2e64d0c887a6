// Runs a pipeline one record per call, so that a record's output depends on that record alone.
// Used for models that are not batch invariant (batch-invariance.ts). On CPU this costs little:
// batch 1 is already the fastest way to run an encoder there (docs/batching.md), and a lone row
// carries no padding.
import type { LoadedModel } from './runtime/model-store.ts';
import { assertBatch, type Pipeline, type PipelineStatistics } from './pipeline.ts';

export class RowByRowPipeline<Input, Output> implements Pipeline<Input, Output> {
  readonly task: string;
  readonly model: LoadedModel;
  private readonly inner: Pipeline<Input, Output>;

  constructor(inner: Pipeline<Input, Output>) {
    this.inner = inner;
    this.task = inner.task;
    this.model = inner.model;
  }

  get statistics(): PipelineStatistics | undefined {
    return this.inner.statistics;
  }

  async run(inputs: readonly Input[]): Promise<Output[]> {
    assertBatch(inputs, this.task);
    const outputs: Output[] = [];
    for (const input of inputs) outputs.push(...(await this.inner.run([input])));
    return outputs;
  }
}

/**
 * The pipeline itself for batch-invariant models and for pipelines that split rows themselves; a
 * row-by-row wrapper otherwise.
 */
export function batchSafe<Input, Output>(
  pipeline: Pipeline<Input, Output>,
): Pipeline<Input, Output> {
  if (pipeline.model.batchInvariant || pipeline.splitsRows === true) return pipeline;
  return new RowByRowPipeline(pipeline);
}

/**
 * Whether a pipeline as batchSafe leaves it runs each row of a batch in a session call of its own:
 * the row-by-row wrapper does, and so does a pipeline that splits rows itself for such a model.
 */
export function runsRowsAlone(pipeline: Pipeline<unknown, unknown>): boolean {
  return !pipeline.model.batchInvariant;
}
