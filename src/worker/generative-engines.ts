// The generative engines of a worker: one GenerativeEngine (its own generation threads, session
// and step loop) per pipeline of a generative task (isGenerativeTask, src/pipelines/registry.ts)
// that opts in with `generative` and that a route uses. Such pipelines are not loaded on the batch
// engine's shards at all.
import type { WorkerConfig } from '../config/schema.ts';
import {
  compileGenerativePlan,
  GenerativeEngine,
  type GenerativePlan,
} from '../generative/generative-engine.ts';
import type { Logger } from '../logger.ts';
import { executionOf } from '../pipelines/registry.ts';
import type { ModelSpec } from '../pipelines/runtime/model-store.ts';

export function isGenerative(config: WorkerConfig, pipeline: string): boolean {
  return config.pipelines[pipeline]?.generative !== undefined;
}

/** Each generative pipeline a route uses, compiled once (with the rest of the worker plan). */
export function compileGenerativePlans(
  config: WorkerConfig,
  models: Record<string, ModelSpec>,
): Map<string, GenerativePlan> {
  const used = new Set(config.routes.map((r) => r.pipeline).filter((p) => isGenerative(config, p)));
  const plans = new Map<string, GenerativePlan>();
  for (const alias of used) {
    const pipeline = config.pipelines[alias];
    const model = pipeline === undefined ? undefined : models[pipeline.model];
    if (pipeline?.generative === undefined || model === undefined) continue;
    const { device, threads, intraOpThreads, maxPending, prefixCache, ...scheduler } =
      pipeline.generative;
    // A decoder-only pipeline's options are every request's defaults; a cohort or segment
    // pipeline's are its own, as on the batch engine.
    const decoderOnly = executionOf(pipeline.task) === 'decoderOnly';
    plans.set(
      alias,
      compileGenerativePlan({
        model,
        task: pipeline.task,
        generation: decoderOnly ? (pipeline.options ?? {}) : {},
        pipelineOptions: decoderOnly ? {} : (pipeline.options ?? {}),
        scheduler,
        device,
        threads,
        ...(intraOpThreads !== undefined ? { intraOpThreads } : {}),
        maxPending,
        prefixCache,
      }),
    );
  }
  return plans;
}

/** Starts them all, or none: a failed start closes those already running. */
export async function startGenerativeEngines(
  plans: ReadonlyMap<string, GenerativePlan>,
  logger: Logger,
): Promise<Map<string, GenerativeEngine>> {
  const engines = new Map<string, GenerativeEngine>();
  try {
    for (const [alias, plan] of plans)
      engines.set(alias, await GenerativeEngine.startFromPlan(plan, { logger }));
  } catch (err) {
    await Promise.allSettled([...engines.values()].map((e) => e.close('abort')));
    throw err;
  }
  return engines;
}
