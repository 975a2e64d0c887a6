// The validated config compiled once into what the worker assembles: its connections (secrets
// read, the clients' owner made), the model specs, what the batch engine loads, and each route's
// settings with its name and task. StreamWorker builds from this and nothing re-reads the config
// behind it; start-up waits ask the same connections.
import type { RouteConfig, WorkerConfig } from '../config/schema.ts';
import type { Environment } from '../config/secrets.ts';
import { Connections } from '../connectors/connections.ts';
import { compileEnginePlan, type EngineOptions, type EnginePlan } from '../engine/engine-plan.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';
import { compileGenerativePlans, isGenerative } from './generative-engines.ts';
import type { GenerativePlan } from '../generative/generative-engine.ts';

export interface RoutePlan {
  /** `route.name`, else `route-<index>`: what logs, metrics and health call the route. */
  name: string;
  route: RouteConfig;
  /** The task of the route's pipeline. */
  task: string;
  /** The pipeline's declared options, which a record may override field by field. */
  pipelineOptions: Record<string, unknown>;
  /** Runs on a generative engine of its own instead of the batch engine. */
  generative: boolean;
}

export interface WorkerPlan {
  /** The config the plan was compiled from. */
  config: WorkerConfig;
  connections: Connections;
  models: Record<string, ModelSpec>;
  /** One generative engine per generative pipeline a route uses, compiled. */
  generative: Map<string, GenerativePlan>;
  /** What the batch engine loads, compiled; undefined when every route's pipeline is generative. */
  batch: EnginePlan | undefined;
  routes: RoutePlan[];
}

export function compileWorkerPlan(
  config: WorkerConfig,
  logger: Logger,
  env: Environment = process.env,
): WorkerPlan {
  const models: Record<string, ModelSpec> = {};
  for (const [alias, model] of Object.entries(config.models)) {
    if (model.path === undefined)
      // settleHubModels (src/worker/hub-models.ts) fills it in before the plan is compiled.
      throw new ConfigError(
        `models.${alias}: the Hub model ${model.hub ?? '(no hub either)'} has no folder yet; settle it with settleHubModels (src/worker/hub-models.ts) before the plan is compiled, as \`hugot-stream run\` does`,
        { field: `models.${alias}.hub` },
      );
    models[alias] = {
      path: model.path,
      ...(model.onnxFile !== undefined ? { onnxFile: model.onnxFile } : {}),
      ...(model.variant !== undefined ? { variant: model.variant } : {}),
      ...(model.runtime !== undefined ? { runtime: model.runtime } : {}),
    };
  }
  const routes = config.routes.map((route, i): RoutePlan => {
    const pipeline = config.pipelines[route.pipeline];
    return {
      name: route.name ?? `route-${i}`,
      route,
      task: pipeline?.task ?? '',
      pipelineOptions: pipeline?.options ?? {},
      generative: isGenerative(config, route.pipeline),
    };
  });
  // Generative pipelines run on their own engines, so the batch engine does not load them.
  const batchPipelines = Object.fromEntries(
    Object.entries(config.pipelines).filter(([alias]) => !isGenerative(config, alias)),
  );
  const batch = routes.some((r) => !r.generative)
    ? compileEnginePlan({
        models,
        // Validated with the config: the schema's pipeline is the engine's pipeline definition.
        pipelines: batchPipelines as EngineOptions['pipelines'],
        shards: config.shards,
        ...(config.batching !== undefined ? { batching: config.batching } : {}),
      })
    : undefined;
  return {
    config,
    connections: Connections.resolve(config, logger, env),
    models,
    generative: compileGenerativePlans(config, models),
    batch,
    routes,
  };
}
