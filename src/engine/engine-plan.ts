// The batch engine's options checked and compiled once: every pipeline's task known and model
// present, its batching compiled for the shards' device, each shard's spec. BatchEngine builds
// from this without checking anything again; the worker compiles it with the rest of its plan,
// so a mistake is found before anything connects.
import {
  compileBatcherOptions,
  type BatcherOptions,
  type CompiledBatcherOptions,
} from '../batching/batcher-options.ts';
import { ConfigError } from '../errors.ts';
import { findTask, unknownTaskMessage } from '../pipelines/registry.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import type { PipelineDefinition } from '../shards/protocol.ts';
import { DEFAULT_SHARDS } from '../shards/device-name.ts';
import { compileShard, type ShardOption, type ShardSpec } from '../shards/shard-spec.ts';

export interface BatchEnginePipeline extends PipelineDefinition {
  /** Overrides the engine-wide batching options for this pipeline. */
  batching?: BatcherOptions;
}

/** What a caller asks of the engine, before it is checked. */
export interface EngineOptions {
  models: Record<string, ModelSpec>;
  pipelines: Record<string, BatchEnginePipeline>;
  /** Default: one CPU shard sized to the machine's cores. */
  shards?: ShardOption[];
  batching?: BatcherOptions;
}

export interface EnginePipelinePlan {
  definition: BatchEnginePipeline;
  model: ModelSpec;
  batching: CompiledBatcherOptions;
}

export interface EnginePlan {
  models: Record<string, ModelSpec>;
  pipelines: Map<string, EnginePipelinePlan>;
  shards: ShardSpec[];
}

export function compileEnginePlan(options: EngineOptions): EnginePlan {
  const shards = (options.shards ?? DEFAULT_SHARDS).map((shard, i) =>
    compileShard(shard, `shards[${i}]`),
  );
  // One queue feeds every shard; a GPU among them wants the wide batches.
  const device = shards.some((spec) => spec.name !== 'cpu') ? 'gpu' : 'cpu';
  const pipelines = new Map<string, EnginePipelinePlan>();
  for (const [alias, definition] of Object.entries(options.pipelines)) {
    if (findTask(definition.task) === undefined) {
      throw new ConfigError(`pipelines.${alias}.task: ${unknownTaskMessage(definition.task)}`, {
        field: `pipelines.${alias}.task`,
      });
    }
    const model = options.models[definition.model];
    if (model === undefined) {
      throw new ConfigError(
        `pipelines.${alias}.model: no model '${definition.model}' in models (${Object.keys(options.models).join(', ') || 'none'})`,
        { field: `pipelines.${alias}.model` },
      );
    }
    const batching = compileBatcherOptions(
      { ...options.batching, ...definition.batching },
      `pipelines.${alias}.batching`,
      device,
    );
    pipelines.set(alias, { definition, model, batching });
  }
  return { models: options.models, pipelines, shards };
}
