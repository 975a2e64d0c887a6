import { describe, expect, it } from 'vitest';
import {
  checkConnections,
  describeConnections,
} from '../../../src/connectors/connection-checks.ts';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { registryTargetOf } from '../../../src/schema/registry-target.ts';

function configText(
  route: string,
  registry = "schemaRegistry: { urls: ['http://registry:8081'] }",
): string {
  return `
models: { m: { path: x } }
pipelines: { p: { task: featureExtraction, model: m } }
connections:
  kafka: { brokers: [localhost:9092] }
  redis: { url: 'redis://localhost:6379' }
  ${registry}
routes:
  - pipeline: p
${route}
`;
}

const kafkaIn = '    source: { type: kafka, topic: docs, groupId: g }';
const kafkaOut = '    sink: { type: kafka, topic: vectors }';

function problemsOf(text: string, env: Record<string, string> = {}): string {
  try {
    parseConfigText(text, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('Schema Registry configuration', () => {
  it('takes avro in with a derived Avro output by default, and fills its defaults', () => {
    const config = parseConfigText(
      configText(
        `${kafkaIn}\n    input: { format: avro, keyFormat: avro, field: text }\n${kafkaOut}`,
      ),
      {},
    );
    const route = config.routes[0];
    expect(route?.input.format).toBe('avro');
    expect(route?.input.keyFormat).toBe('avro');
    expect(route?.output.subjectNaming).toBe('topic');
    expect(config.connections.schemaRegistry).toEqual({
      urls: ['http://registry:8081'],
      requestTimeoutMs: 10_000,
      cacheCapacity: 1000,
    });
  });

  it('names each misuse and its fix', () => {
    const noRegistry = problemsOf(
      configText(`${kafkaIn}\n    input: { format: protobuf }\n${kafkaOut}`, ''),
    );
    expect(noRegistry).toMatch(
      /connections\.schemaRegistry is missing; add connections\.schemaRegistry\.urls/,
    );
    const notKafka = problemsOf(
      configText(
        `    source: { type: redis-stream, stream: s, group: g }\n    input: { format: avro }\n${kafkaOut}`,
      ),
    );
    expect(notKafka).toMatch(/routes\.0\.input\.format: avro records come from Kafka/);
    const deriveFromJson = problemsOf(
      configText(`${kafkaIn}\n    output: { schema: derive }\n${kafkaOut}`),
    );
    expect(deriveFromJson).toMatch(
      /derive adds the output field to the input's schema, and input\.format json has none/,
    );
    const resultMode = problemsOf(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n    output: { mode: result }\n${kafkaOut}`,
      ),
    );
    expect(resultMode).toMatch(
      /routes\.0\.output\.mode: output\.schema derive adds the output field/,
    );
    const dotted = problemsOf(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n    output: { field: a.b }\n${kafkaOut}`,
      ),
    );
    expect(dotted).toMatch(/routes\.0\.output\.field: .*'a\.b' is a path/);
    const fileSink = problemsOf(
      configText(
        `${kafkaIn}\n    output: { schema: { subject: s, version: 1 } }\n    sink: { type: file, path: out.jsonl }`,
      ),
    );
    expect(fileSink).toMatch(
      /routes\.0\.output\.schema: outputs with a schema are written to Kafka/,
    );
  });

  it('refuses credentials in a registry URL without echoing them', () => {
    const message = problemsOf(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n${kafkaOut}`,
        "schemaRegistry: { urls: ['https://key:s3cret@registry:8081'] }",
      ),
    );
    expect(message).toMatch(/credentials in a registry URL .* are refused/);
    expect(message).not.toContain('s3cret');
  });

  it('reads basic and bearer secrets from the environment, naming a missing variable', () => {
    const basic = parseConfigText(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n${kafkaOut}`,
        "schemaRegistry: { urls: ['https://registry:8081'], auth: { type: basic, usernameEnv: SR_KEY, passwordEnv: SR_SECRET } }",
      ),
      {},
    );
    const registry = basic.connections.schemaRegistry;
    if (registry === undefined) throw new Error('expected connections.schemaRegistry');
    expect(registryTargetOf(registry, { SR_KEY: 'key', SR_SECRET: 's3cret' }).basic).toBe(
      'key:s3cret',
    );
    expect(() => checkConnections(basic, { SR_KEY: 'key' })).toThrow(
      /connections\.schemaRegistry\.auth\.passwordEnv names SR_SECRET, but SR_SECRET is not set/,
    );
    expect(describeConnections(basic).join('\n')).toMatch(
      /schema registry https:\/\/registry:8081 \(TLS, basic auth\)/,
    );
    expect(describeConnections(basic).join('\n')).not.toContain('s3cret');
    const bearer = parseConfigText(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n${kafkaOut}`,
        "schemaRegistry: { urls: ['https://a:8081', 'https://b:8081'], auth: { type: bearer, tokenEnv: SR_TOKEN } }",
      ),
      {},
    );
    const target = registryTargetOf(
      bearer.connections.schemaRegistry as NonNullable<typeof registry>,
      {
        SR_TOKEN: 'tok',
      },
    );
    expect(target.bearer).toBe('tok');
    expect(target.urls).toEqual(['https://a:8081', 'https://b:8081']);
  });

  it('refuses tls with an http:// URL', () => {
    const config = parseConfigText(
      configText(
        `${kafkaIn}\n    input: { format: avro }\n${kafkaOut}`,
        "schemaRegistry: { urls: ['http://registry:8081'], tls: {} }",
      ),
      {},
    );
    expect(() => checkConnections(config, {})).toThrow(
      /connections\.schemaRegistry\.tls is set, but not every URL is https/,
    );
  });
});
