// Reads a YAML config, fills `${VAR}` / `${VAR:-default}` from the environment, applies
// HUGOT__a__b=value overrides, validates once, and checks the cross-references zod cannot see.
// Every problem is reported at once, each with its path and a fix: every field (each task's
// options, batching and shards included) with the model and pipeline names the file refers to,
// then, once the fields are right, the references that need valid fields to judge.
import { readFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { ConfigError } from '../errors.ts';
import { batcherOptionsSchema } from '../batching/batcher-options.ts';
import { checkWithSchema, formatPath } from '../options/parse.ts';
import { readsAudio, readsImageField, readsImages } from '../pipelines/registry.ts';
import { resolveConnectionPaths } from './connection-paths.ts';
import { routeLoopProblems } from './route-loops.ts';
import { vectorSizeProblems, vectorTaskProblems } from './vector-output.ts';
import { isSchemaFormat } from './record-format-schema.ts';
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
    if (model.path !== undefined && !isAbsolute(model.path)) model.path = resolve(base, model.path);
  resolveConnectionPaths(config, base);
  // Needs the model folders, so it waits for their resolved paths.
  const sizes = await vectorSizeProblems(config);
  if (sizes.length > 0) throw invalid(path, sizes);
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
  const checked = checkWithSchema(configSchema, raw);
  if (!checked.ok) {
    const fields = checked.problems.map((p) => {
      const field = formatPath('', p.path);
      return { field, line: `${field || '(the file)'}: ${p.message}` };
    });
    // The names that tie the file together are judged too, so a typo in one is not found only
    // on the next attempt; the rest of the references wait for valid fields.
    const seen = new Set(fields.map((p) => p.field));
    throw invalid(source, [
      ...fields,
      ...nameReferenceProblems(raw).filter((p) => !seen.has(p.field)),
    ]);
  }
  const problems = referenceProblems(checked.data);
  if (problems.length > 0) throw invalid(source, problems);
  return checked.data;
}

interface ConfigProblem {
  field: string;
  /** What is wrong and how to fix it, starting with where. */
  line: string;
}

function invalid(source: string, problems: ConfigProblem[]): ConfigError {
  const lines = problems.map((p) => p.line);
  const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
  return new ConfigError(`${source} is not valid (${count}):\n  ${lines.join('\n  ')}`, {
    field: problems[0]?.field ?? 'config',
  });
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

const entries = (value: unknown): [string, unknown][] =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value) : [];

/**
 * Pipelines naming a model and routes naming a pipeline that the file does not define, read from
 * the raw file: only references written as strings are judged, the rest is the schema's to report.
 */
function nameReferenceProblems(raw: unknown): ConfigProblem[] {
  const root = Object.fromEntries(entries(raw));
  const models = new Set(entries(root['models']).map(([key]) => key));
  const pipelines = entries(root['pipelines']);
  const pipelineNames = new Set(pipelines.map(([key]) => key));
  const problems: ConfigProblem[] = [];
  for (const [alias, pipeline] of pipelines) {
    const model = Object.fromEntries(entries(pipeline))['model'];
    if (typeof model === 'string' && !models.has(model)) {
      const field = `pipelines.${alias}.model`;
      problems.push({ field, line: missingModel(field, model) });
    }
  }
  const routes = Array.isArray(root['routes']) ? (root['routes'] as unknown[]) : [];
  routes.forEach((route, i) => {
    const name = Object.fromEntries(entries(route))['pipeline'];
    if (typeof name === 'string' && !pipelineNames.has(name)) {
      const field = `routes.${i}.pipeline`;
      problems.push({ field, line: missingPipeline(field, name) });
    }
  });
  return problems;
}

const missingModel = (field: string, model: string): string =>
  `${field}: no model '${model}' under models; define it or fix the name`;
const missingPipeline = (field: string, pipeline: string): string =>
  `${field}: no pipeline '${pipeline}' under pipelines; define it or fix the name`;

function referenceProblems(config: WorkerConfig): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const problem: Report = (line, { field }) => {
    problems.push({ field, line });
  };
  for (const [alias, pipeline] of Object.entries(config.pipelines)) {
    // Each level is valid on its own; the engine compiles the pipeline's over the worker's.
    if (pipeline.batching !== undefined && config.batching !== undefined) {
      const merged = checkWithSchema(batcherOptionsSchema, {
        ...config.batching,
        ...pipeline.batching,
      });
      if (!merged.ok)
        for (const p of merged.problems)
          problem(
            `${formatPath(`pipelines.${alias}.batching`, p.path)}: ${p.message} (with the top-level batching under it)`,
            { field: `pipelines.${alias}.batching` },
          );
    }
    if (config.models[pipeline.model] === undefined) {
      const field = `pipelines.${alias}.model`;
      problem(missingModel(field, pipeline.model), { field });
    }
  }
  // Logs, metrics and health name a route by its name, so two routes may not share one.
  const named = new Map<string, number>();
  config.routes.forEach((route, i) => {
    if (route.name === undefined) return;
    const first = named.get(route.name);
    if (first === undefined) named.set(route.name, i);
    else
      problem(
        `routes.${i}.name: '${route.name}' is already the name of routes.${first}; give each route its own name`,
        { field: `routes.${i}.name` },
      );
  });
  config.routes.forEach((route, i) => {
    const at = `routes.${i}`;
    if (config.pipelines[route.pipeline] === undefined) {
      problem(missingPipeline(`${at}.pipeline`, route.pipeline), { field: `${at}.pipeline` });
    }
    const usesKafka = [route.source, route.sink, route.dlq].some((end) => end?.type === 'kafka');
    if (usesKafka && config.connections.kafka === undefined) {
      problem(`${at} uses Kafka, but connections.kafka is missing; add connections.kafka.brokers`, {
        field: 'connections.kafka',
      });
    }
    const usesRedis = [route.source, route.sink, route.dlq].some(
      (end) => end !== undefined && ['bullmq', 'redis-stream', 'bullmq-result'].includes(end.type),
    );
    if (usesRedis && config.connections.redis === undefined) {
      problem(`${at} uses Redis, but connections.redis is missing; add connections.redis.url`, {
        field: 'connections.redis',
      });
    }
    if (route.sink.type === 'bullmq-result' && route.source.type !== 'bullmq') {
      problem(
        `${at}.sink: 'bullmq-result' returns the result to a BullMQ job, so the source must be bullmq`,
        { field: `${at}.sink.type` },
      );
    }
    if (
      config.delivery.mode === 'exactly-once' &&
      !(route.source.type === 'kafka' && route.sink.type === 'kafka')
    ) {
      problem(
        `${at}: delivery.mode exactly-once works for Kafka -> Kafka routes only; use at-least-once here`,
        { field: 'delivery.mode' },
      );
    }
    problems.push(...routeLoopProblems(route, at));
    checkGenerationRoute(config, route, at, problem);
    checkInputRoute(config, route, at, problem);
    checkSchemaRoute(config, route, at, problem);
  });
  problems.push(...vectorTaskProblems(config));
  return problems;
}

type Report = (message: string, options: { field: string }) => void;

/** Binary records and image inputs: only where a task reads images, and never merged into. */
function checkInputRoute(
  config: WorkerConfig,
  route: RouteConfig,
  at: string,
  problem: Report,
): void {
  const pipeline = config.pipelines[route.pipeline];
  // A missing pipeline is reported on its own; nothing here can be judged without it.
  if (pipeline === undefined) return;
  const { task } = pipeline;
  const images = readsImages(task);
  if (route.input.images !== undefined && !images && !readsImageField(task))
    problem(
      `${at}.input.images: pipeline '${route.pipeline}' (${task}) does not take images; remove input.images`,
      { field: `${at}.input.images` },
    );
  if (route.input.format === 'bytes' && !images && !readsAudio(task))
    problem(
      `${at}.input.format: bytes (the raw record) is for image tasks and audio tasks; use json or text for ${task}`,
      { field: `${at}.input.format` },
    );
  if (route.input.format === 'bytes' && route.output.mode === 'merge')
    problem(
      `${at}.output.mode: a binary record (input.format bytes) cannot be merged into; set output.mode: result`,
      { field: `${at}.output.mode` },
    );
  if (route.input.format === 'bytes' && route.input.images?.from === 'path')
    problem(
      `${at}.input.images.from: path reads a path from a text field, but input.format bytes takes the record's bytes as the image; use input.format json or text`,
      { field: `${at}.input.images.from` },
    );
}

/** Schema Registry formats: Kafka ends, a registry connection, and what derive can add. */
function checkSchemaRoute(
  config: WorkerConfig,
  route: RouteConfig,
  at: string,
  problem: Report,
): void {
  const { format, keyFormat } = route.input;
  const schemaIn = isSchemaFormat(format);
  for (const [field, value] of [
    ['format', format],
    ['keyFormat', keyFormat],
  ] as const)
    if (isSchemaFormat(value) && route.source.type !== 'kafka')
      problem(
        `${at}.input.${field}: ${value} records come from Kafka in the Confluent wire format; use a kafka source or input.${field} ${field === 'format' ? 'json' : 'bytes'}`,
        { field: `${at}.input.${field}` },
      );
  const schema = route.output.schema ?? (schemaIn ? 'derive' : undefined);
  const needsRegistry = schemaIn || isSchemaFormat(keyFormat) || route.output.schema !== undefined;
  if (needsRegistry && config.connections.schemaRegistry === undefined)
    problem(
      `${at} uses a Schema Registry format, but connections.schemaRegistry is missing; add connections.schemaRegistry.urls`,
      { field: 'connections.schemaRegistry' },
    );
  if (needsRegistry && config.pipelines[route.pipeline]?.generative !== undefined)
    problem(
      `${at}: a generative pipeline writes JSON records (and streamed partials); Schema Registry formats are for batch pipelines`,
      { field: `${at}.input.format` },
    );
  if (route.output.schema !== undefined && route.sink.type !== 'kafka')
    problem(
      `${at}.output.schema: outputs with a schema are written to Kafka; use a kafka sink or remove output.schema`,
      { field: `${at}.output.schema` },
    );
  if (schema !== 'derive' || route.sink.type !== 'kafka') return;
  if (!schemaIn)
    problem(
      `${at}.output.schema: derive adds the output field to the input's schema, and input.format ${format} has none; use input.format avro, protobuf or json-schema, or give output.schema {subject, version}`,
      { field: `${at}.output.schema` },
    );
  if (route.output.mode !== 'merge')
    problem(
      `${at}.output.mode: output.schema derive adds the output field to the input record; use output.mode merge, or give output.schema {subject, version} for the result alone`,
      { field: `${at}.output.mode` },
    );
  if (route.output.field.includes('.'))
    problem(
      `${at}.output.field: output.schema derive adds a top-level field; '${route.output.field}' is a path, use a plain name`,
      { field: `${at}.output.field` },
    );
}

/** Streamed partials and per-request generation settings need a route to a generative pipeline. */
function checkGenerationRoute(
  config: WorkerConfig,
  route: RouteConfig,
  at: string,
  problem: Report,
): void {
  const generative = config.pipelines[route.pipeline]?.generative !== undefined;
  const asks: [string, unknown][] = [
    ['output.stream', route.output.stream],
    ['generation', route.generation],
  ];
  for (const [field, value] of asks) {
    if (value !== undefined && !generative) {
      problem(
        `${at}.${field} needs a generative pipeline; add pipelines.${route.pipeline}.generative or remove ${field}`,
        { field: `${at}.${field}` },
      );
    }
  }
  const streams = (route.output.stream?.everyTokens ?? 0) > 0;
  if (streams && config.delivery.mode === 'exactly-once') {
    // A partial inside the partition's transaction becomes visible to read_committed consumers
    // only with its final record, so streaming would promise what it cannot deliver.
    problem(
      `${at}.output.stream: partial records cannot be exactly-once (read_committed consumers would see them only with the final record); remove output.stream to write final records only, or use delivery.mode at-least-once`,
      { field: `${at}.output.stream` },
    );
  }
  if (streams && route.sink.type === 'bullmq-result') {
    problem(
      `${at}.output.stream: a 'bullmq-result' sink holds one return value per job, not partial records; use a bullmq, kafka, redis-stream or file sink, or remove output.stream`,
      { field: `${at}.output.stream` },
    );
  }
  for (const field of ['optionsField', 'requestIdField'] as const) {
    if (route.generation?.[field] !== undefined && route.input.format !== 'json') {
      problem(
        `${at}.generation.${field}: the record is not read as JSON (input.format ${route.input.format}), so it has no fields; use input.format json or remove ${field}`,
        { field: `${at}.generation.${field}` },
      );
    }
  }
}
