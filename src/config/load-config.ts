// Reads a YAML config, fills `${VAR}` / `${VAR:-default}` from the environment, applies
// HUGOT__a__b=value overrides, validates once, and checks the cross-references zod cannot see.
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { ConfigError } from '../errors.ts';
import { parseWithSchema } from '../options/parse.ts';
import { parseGenerationOptions } from '../pipelines/generation-options.ts';
import { IMAGE_TASKS } from '../stream/image-tasks.ts';
import { resolveConnectionPaths } from './connection-checks.ts';
import { configSchema, type RouteConfig, type WorkerConfig } from './schema.ts';

export type Environment = Record<string, string | undefined>;

export async function loadConfigFile(
  path: string,
  env: Environment = process.env,
): Promise<WorkerConfig> {
  const text = await readFile(path, 'utf8').catch((cause: unknown) => {
    throw new ConfigError(
      `cannot read the config file ${path}: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, field: 'config' },
    );
  });
  const config = parseConfigText(text, env, path);
  // Model paths are relative to the config file, so a config works from any directory.
  const base = dirname(resolve(path));
  for (const model of Object.values(config.models))
    if (!isAbsolute(model.path)) model.path = resolve(base, model.path);
  resolveConnectionPaths(config, base);
  return config;
}

export function parseConfigText(
  text: string,
  env: Environment = process.env,
  source = 'config',
): WorkerConfig {
  let raw: unknown;
  try {
    raw = parse(interpolate(text, env, source));
  } catch (cause) {
    if (cause instanceof ConfigError) throw cause;
    throw new ConfigError(
      `${source} is not valid YAML: ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause, field: 'config' },
    );
  }
  applyOverrides(raw, env);
  const config = parseWithSchema(configSchema, raw, '');
  checkReferences(config);
  return config;
}

function interpolate(text: string, env: Environment, source: string): string {
  return text.replace(
    /\$\{([A-Z0-9_]+)(?::-([^}]*))?\}/gi,
    (_, name: string, fallback: string | undefined) => {
      const value = env[name] ?? fallback;
      if (value === undefined) {
        throw new ConfigError(
          `${source} uses \${${name}}, but ${name} is not set; set it or write \${${name}:-default}`,
          { field: name },
        );
      }
      return value;
    },
  );
}

/** HUGOT__routes__0__source__topic=events sets routes[0].source.topic; values parse as JSON when they can. */
function applyOverrides(raw: unknown, env: Environment): void {
  if (raw === null || typeof raw !== 'object') return;
  for (const [key, value] of Object.entries(env)) {
    if (!key.startsWith('HUGOT__') || value === undefined) continue;
    const path = key.slice('HUGOT__'.length).split('__');
    let current = raw as Record<string, unknown>;
    for (const part of path.slice(0, -1)) {
      if (current[part] === null || typeof current[part] !== 'object') current[part] = {};
      current = current[part] as Record<string, unknown>;
    }
    current[path[path.length - 1] as string] = parseScalar(value);
  }
}

function parseScalar(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
}

function checkReferences(config: WorkerConfig): void {
  for (const [alias, pipeline] of Object.entries(config.pipelines)) {
    if (pipeline.generative !== undefined && pipeline.task !== 'textGeneration') {
      throw new ConfigError(
        `pipelines.${alias}.generative: only textGeneration pipelines run on the generative engine; remove it or use task textGeneration`,
        { field: `pipelines.${alias}.generative` },
      );
    }
    // The generative engine's requests start from these; a batch pipeline checks its own on load.
    if (pipeline.generative !== undefined)
      parseGenerationOptions(pipeline.options, `pipelines.${alias}.options`);
    if (config.models[pipeline.model] === undefined) {
      throw new ConfigError(
        `pipelines.${alias}.model: no model '${pipeline.model}' under models; define it or fix the name`,
        {
          field: `pipelines.${alias}.model`,
        },
      );
    }
  }
  config.routes.forEach((route, i) => {
    const at = `routes.${i}`;
    if (config.pipelines[route.pipeline] === undefined) {
      throw new ConfigError(
        `${at}.pipeline: no pipeline '${route.pipeline}' under pipelines; define it or fix the name`,
        { field: `${at}.pipeline` },
      );
    }
    const usesKafka = [route.source, route.sink, route.dlq].some((end) => end?.type === 'kafka');
    if (usesKafka && config.connections.kafka === undefined) {
      throw new ConfigError(
        `${at} uses Kafka, but connections.kafka is missing; add connections.kafka.brokers`,
        { field: 'connections.kafka' },
      );
    }
    const usesRedis = [route.source, route.sink, route.dlq].some(
      (end) => end !== undefined && ['bullmq', 'redis-stream', 'bullmq-result'].includes(end.type),
    );
    if (usesRedis && config.connections.redis === undefined) {
      throw new ConfigError(
        `${at} uses Redis, but connections.redis is missing; add connections.redis.url`,
        { field: 'connections.redis' },
      );
    }
    if (route.sink.type === 'bullmq-result' && route.source.type !== 'bullmq') {
      throw new ConfigError(
        `${at}.sink: 'bullmq-result' returns the result to a BullMQ job, so the source must be bullmq`,
        { field: `${at}.sink.type` },
      );
    }
    if (
      config.delivery.mode === 'exactly-once' &&
      !(route.source.type === 'kafka' && route.sink.type === 'kafka')
    ) {
      throw new ConfigError(
        `${at}: delivery.mode exactly-once works for Kafka -> Kafka routes only; use at-least-once here`,
        { field: 'delivery.mode' },
      );
    }
    checkGenerationRoute(config, route, at);
    checkInputRoute(config, route, at);
  });
}

/** Binary records and image inputs: only where a task reads images, and never merged into. */
function checkInputRoute(config: WorkerConfig, route: RouteConfig, at: string): void {
  const task = config.pipelines[route.pipeline]?.task ?? '';
  const readsImages = IMAGE_TASKS.has(task);
  if (route.input.images !== undefined && !readsImages)
    throw new ConfigError(
      `${at}.input.images: pipeline '${route.pipeline}' (${task}) does not take images; remove input.images`,
      { field: `${at}.input.images` },
    );
  if (route.input.format === 'bytes' && !readsImages)
    throw new ConfigError(
      `${at}.input.format: bytes (the raw record) is for image tasks; use json or text for ${task}`,
      { field: `${at}.input.format` },
    );
  if (route.input.format === 'bytes' && route.output.mode === 'merge')
    throw new ConfigError(
      `${at}.output.mode: a binary record (input.format bytes) cannot be merged into; set output.mode: result`,
      { field: `${at}.output.mode` },
    );
  if (route.input.format === 'bytes' && route.input.images?.from === 'path')
    throw new ConfigError(
      `${at}.input.images.from: path reads a path from a text field, but input.format bytes takes the record's bytes as the image; use input.format json or text`,
      { field: `${at}.input.images.from` },
    );
}

/** Streamed partials and per-request generation settings need a route to a generative pipeline. */
function checkGenerationRoute(config: WorkerConfig, route: RouteConfig, at: string): void {
  const generative = config.pipelines[route.pipeline]?.generative !== undefined;
  const asks: [string, unknown][] = [
    ['output.stream', route.output.stream],
    ['generation', route.generation],
  ];
  for (const [field, value] of asks) {
    if (value !== undefined && !generative) {
      throw new ConfigError(
        `${at}.${field} needs a generative pipeline; add pipelines.${route.pipeline}.generative or remove ${field}`,
        { field: `${at}.${field}` },
      );
    }
  }
  const streams = (route.output.stream?.everyTokens ?? 0) > 0;
  if (streams && config.delivery.mode === 'exactly-once') {
    // A partial inside the partition's transaction becomes visible to read_committed consumers
    // only with its final record, so streaming would promise what it cannot deliver.
    throw new ConfigError(
      `${at}.output.stream: partial records cannot be exactly-once (read_committed consumers would see them only with the final record); remove output.stream to write final records only, or use delivery.mode at-least-once`,
      { field: `${at}.output.stream` },
    );
  }
  if (streams && route.sink.type === 'bullmq-result') {
    throw new ConfigError(
      `${at}.output.stream: a 'bullmq-result' sink holds one return value per job, not partial records; use a bullmq, kafka, redis-stream or file sink, or remove output.stream`,
      { field: `${at}.output.stream` },
    );
  }
  for (const field of ['optionsField', 'requestIdField'] as const) {
    if (route.generation?.[field] !== undefined && route.input.format !== 'json') {
      throw new ConfigError(
        `${at}.generation.${field}: the record is not read as JSON (input.format ${route.input.format}), so it has no fields; use input.format json or remove ${field}`,
        { field: `${at}.generation.${field}` },
      );
    }
  }
}
