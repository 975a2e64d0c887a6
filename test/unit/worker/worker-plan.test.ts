// The config compiled once (issue 36): secrets are read when the plan is made and never again,
// one Kafka driver serves every Kafka end of the worker, and each route's name, task and options
// are settled in the plan rather than re-derived by whoever needs them.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { silentLogger } from '../../../src/logger.ts';
import { compileWorkerPlan } from '../../../src/worker/worker-plan.ts';
import { startupDependencies } from '../../../src/worker/startup-dependencies.ts';

const CONFIG = `
models:
  m: { path: models/x }
  g: { path: models/gen }
pipelines:
  embed: { task: featureExtraction, model: m, options: { normalize: true } }
  chat: { task: textGeneration, model: g, generative: {} }
routes:
  - name: enrich
    source: { type: kafka, topic: in, groupId: g }
    pipeline: embed
    sink: { type: kafka, topic: out }
    dlq: { type: redis-stream, stream: dead }
  - source: { type: redis-stream, stream: prompts, group: g }
    pipeline: chat
    sink: { type: kafka, topic: answers }
connections:
  kafka: { brokers: ['b:1'], sasl: { mechanism: plain, username: u, passwordEnv: KAFKA_PW } }
  redis: { url: 'redis://r:6379', passwordEnv: REDIS_PW }
`;

/** An environment that counts how often each variable is read. */
function countingEnv(values: Record<string, string>): {
  env: Record<string, string | undefined>;
  reads: Map<string, number>;
} {
  const reads = new Map<string, number>();
  const env = new Proxy(values, {
    get(target, key: string) {
      reads.set(key, (reads.get(key) ?? 0) + 1);
      return target[key];
    },
  });
  return { env, reads };
}

describe('worker plan', () => {
  const values = { KAFKA_PW: 'k-secret', REDIS_PW: 'r-secret' };

  it('reads every secret once, when it is compiled', () => {
    const config = parseConfigText(CONFIG, values);
    const { env, reads } = countingEnv(values);
    const plan = compileWorkerPlan(config, silentLogger, env);
    const afterCompile = new Map(reads);
    expect(afterCompile.get('KAFKA_PW')).toBeGreaterThan(0);
    expect(afterCompile.get('REDIS_PW')).toBeGreaterThan(0);
    // Every end and the start-up checks ask the plan's connections, never the environment.
    plan.connections.redis('sink');
    plan.connections.redis('source');
    plan.connections.kafka('source');
    startupDependencies(plan);
    expect(reads).toEqual(afterCompile);
    expect(plan.connections.redis('sink').options.password).toBe('r-secret');
  });

  it('makes one Kafka driver, shared by every route that names Kafka', () => {
    const plan = compileWorkerPlan(parseConfigText(CONFIG, values), silentLogger, values);
    const first = plan.connections.kafka('source');
    expect(plan.connections.kafka('sink')).toBe(first);
    // Two plans of the same config own two drivers: nothing is cached behind the config object.
    const other = compileWorkerPlan(plan.config, silentLogger, values);
    expect(other.connections.kafka('source')).not.toBe(first);
  });

  it('settles each route: its name, task, options and engine', () => {
    const plan = compileWorkerPlan(parseConfigText(CONFIG, values), silentLogger, values);
    expect(
      plan.routes.map(({ name, task, pipelineOptions, generative }) => ({
        name,
        task,
        pipelineOptions,
        generative,
      })),
    ).toEqual([
      {
        name: 'enrich',
        task: 'featureExtraction',
        pipelineOptions: { normalize: true },
        generative: false,
      },
      { name: 'route-1', task: 'textGeneration', pipelineOptions: {}, generative: true },
    ]);
    // The batch engine loads only what does not run on a generative engine.
    expect([...(plan.batch?.pipelines.keys() ?? [])]).toEqual(['embed']);
    // Compiled once, here: the engine starts from these and checks nothing again.
    expect(plan.batch?.pipelines.get('embed')?.batching.maxBatchSize).toBeGreaterThan(0);
    expect(plan.batch?.shards[0]?.name).toBe('cpu');
    // The generative pipeline is compiled for its own engine, with its defaults settled.
    const chat = plan.generative.get('chat');
    expect(chat?.setup.task).toBe('textGeneration');
    expect(chat?.threads).toBe(1);
    expect(chat?.device).toBe('cpu');
    expect(plan.models.m?.path).toBe('models/x');
  });

  it('refuses a secret that is not set, naming the field, before anything connects', () => {
    const config = parseConfigText(CONFIG, values);
    expect(() => compileWorkerPlan(config, silentLogger, { KAFKA_PW: 'k' })).toThrow(ConfigError);
    expect(() => compileWorkerPlan(config, silentLogger, { KAFKA_PW: 'k' })).toThrow(/REDIS_PW/);
  });

  it('names Kafka as missing only when something asks for it', () => {
    const config = parseConfigText(
      `
models: { m: { path: models/x } }
pipelines: { embed: { task: featureExtraction, model: m } }
routes:
  - source: { type: redis-stream, stream: in, group: g }
    pipeline: embed
    sink: { type: redis-stream, stream: out }
connections: { redis: { url: 'redis://r:6379' } }
`,
      {},
    );
    const plan = compileWorkerPlan(config, silentLogger, values);
    expect(() => plan.connections.kafka('sink')).toThrow(/connections\.kafka\.brokers/);
  });

  it('waits at start-up for the Schema Registry a route needs, its secret read once with the plan', () => {
    const text = `
models: { m: { path: models/x } }
pipelines: { embed: { task: featureExtraction, model: m } }
routes:
  - source: { type: kafka, topic: in, groupId: g }
    pipeline: embed
    input: { format: avro }
    sink: { type: kafka, topic: out }
connections:
  kafka: { brokers: ['b:1'] }
  schemaRegistry:
    urls: ['https://sr:8081']
    auth: { type: bearer, tokenEnv: SR_TOKEN }
`;
    const srValues = { SR_TOKEN: 'sr-secret' };
    const { env, reads } = countingEnv(srValues);
    const plan = compileWorkerPlan(parseConfigText(text, srValues), silentLogger, env);
    const afterCompile = new Map(reads);
    expect(afterCompile.get('SR_TOKEN')).toBe(1);
    const names = startupDependencies(plan).map((d) => d.name);
    expect(names).toEqual(['Kafka at b:1', 'Schema Registry at https://sr:8081']);
    expect(plan.connections.schemaRegistry('route')).toBe(plan.connections.schemaRegistry('x'));
    expect(reads).toEqual(afterCompile);
  });
});
