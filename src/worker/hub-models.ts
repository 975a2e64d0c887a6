// Hub models in a config turned into model folders before the plan is compiled: each `hub:`
// model is found in the Hub cache, or pulled there when absent (refused in offline mode with the
// exact command that pulls it), and its snapshot folder becomes the model's path. validate-config
// asks the same question without fetching anything.
import type { WorkerConfig } from '../config/schema.ts';
import { ConfigError, HubError } from '../errors.ts';
import type { HubClient } from '../hub/hub-client.ts';
import type { HubSettings } from '../hub/hub-settings.ts';
import { findCached, pullModel, type PulledModel, type PullEvent } from '../hub/pull.ts';
import { DEFAULT_REVISION, pullCommand } from '../hub/repo-spec.ts';
import { DEFAULT_VARIANT } from '../hub/variants.ts';
import type { Logger } from '../logger.ts';

type ModelConfig = WorkerConfig['models'][string];

export interface HubModelOptions {
  settings: HubSettings;
  logger: Logger;
  client?: HubClient;
  onEvent?: (event: PullEvent) => void;
}

const hubModels = (config: WorkerConfig): [string, ModelConfig & { hub: string }][] =>
  Object.entries(config.models).filter(
    (e): e is [string, ModelConfig & { hub: string }] => e[1].hub !== undefined,
  );

const requestOf = (model: ModelConfig & { hub: string }) => ({
  repo: model.hub,
  revision: model.revision ?? DEFAULT_REVISION,
  variant: model.variant ?? DEFAULT_VARIANT,
});

/** Offline, a model the cache lacks cannot be had: the message gives the command that pulls it. */
function offlineAbsent(
  alias: string,
  request: ReturnType<typeof requestOf>,
  settings: HubSettings,
): ConfigError {
  return new ConfigError(
    `models.${alias}: ${request.repo}@${request.revision} (${request.variant}) is not in the Hub cache ${settings.cacheDir} and HF_HUB_OFFLINE is set; run \`${pullCommand(request, request.variant)}\` where the Hub is reachable (with the same HF_HUB_CACHE), or unset HF_HUB_OFFLINE`,
    { field: `models.${alias}.hub` },
  );
}

/** Fills in `path` (and `onnxFile` when the variant is one graph) of every Hub model, pulling what the cache lacks. */
export async function settleHubModels(
  config: WorkerConfig,
  options: HubModelOptions,
): Promise<void> {
  for (const [alias, model] of hubModels(config)) {
    const request = requestOf(model);
    let pulled = await findCached(request, options.settings);
    if (pulled === undefined && options.settings.offline)
      throw offlineAbsent(alias, request, options.settings);
    if (pulled === undefined) {
      options.logger.info(
        { model: alias, repo: request.repo, revision: request.revision, variant: request.variant },
        'pulling a Hub model the cache lacks',
      );
      try {
        pulled = await pullModel(request, {
          settings: options.settings,
          ...(options.client !== undefined ? { client: options.client } : {}),
          ...(options.onEvent !== undefined ? { onEvent: options.onEvent } : {}),
        });
      } catch (err) {
        if (err instanceof HubError)
          throw new ConfigError(`models.${alias}: ${err.message}`, {
            cause: err,
            field: `models.${alias}.hub`,
          });
        throw err;
      }
    }
    useSnapshot(model, pulled);
    options.logger.info(
      {
        model: alias,
        repo: pulled.repo,
        revision: pulled.revision,
        commit: pulled.commit,
        variant: pulled.variant,
        path: pulled.path,
        cached: pulled.cached,
      },
      pulled.revision === pulled.commit
        ? 'Hub model ready (pinned commit)'
        : `Hub model ready; pin it with revision: ${pulled.commit}`,
    );
  }
}

function useSnapshot(model: ModelConfig, pulled: PulledModel): void {
  model.path = pulled.path;
  // The snapshot may hold other variants (an earlier pull, a Python user's), and the same graph
  // both at its root and in onnx/: a one-graph variant is loaded by its file, which the loader
  // takes instead of a variant (it refuses both), so the variant, now said by the file, goes.
  // A variant of several graphs (encoder and decoder) is left for the loader to choose by name.
  const [graph, ...others] = pulled.graphs;
  if (model.onnxFile === undefined && graph !== undefined && others.length === 0) {
    model.onnxFile = graph;
    delete model.variant;
  }
}

/**
 * What validate-config says of each Hub model: cached (where; its path is then filled in as at
 * start-up), or what start-up would pull; offline and absent is refused. Fetches nothing.
 */
export async function describeHubModels(
  config: WorkerConfig,
  settings: HubSettings,
): Promise<string[]> {
  const lines: string[] = [];
  for (const [alias, model] of hubModels(config)) {
    const request = requestOf(model);
    const cached = await findCached(request, settings);
    const what = `${request.repo}@${request.revision} (${request.variant})`;
    if (cached !== undefined) {
      // Its folder, as start-up would settle it, so checks that read folders can read this one.
      useSnapshot(model, cached);
      lines.push(`${alias}: ${what} is cached at commit ${cached.commit}: ${cached.path}`);
    } else if (settings.offline) throw offlineAbsent(alias, request, settings);
    else
      lines.push(
        `${alias}: ${what} is not cached; \`run\` pulls it from ${settings.endpoint} into ${settings.cacheDir} (or run \`${pullCommand(request, request.variant)}\` now)`,
      );
  }
  return lines;
}
