import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import type { DriverFeatures } from '../../../src/connectors/kafka/driver.ts';
import { fallbacksOf, kafkaClientFor } from '../../../src/connectors/kafka/driver-for.ts';
import { ConfigError } from '../../../src/errors.ts';

const valid = `
models:
  m: { path: models/x }
pipelines:
  p: { task: featureExtraction, model: m }
routes:
  - source: { type: file, path: in.jsonl }
    pipeline: p
    sink: { type: file, path: out.jsonl }
`;

function fails(text: string, env: Record<string, string> = {}): string {
  try {
    parseConfigText(text, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('fills every default in one place', () => {
    const config = parseConfigText(valid, {});
    expect(config.delivery).toEqual({
      mode: 'at-least-once',
      retries: 2,
      commitIntervalMs: 1000,
      maxAttempts: 5,
    });
    expect(config.routes[0]?.input).toEqual({ format: 'json', keyFormat: 'bytes', field: 'text' });
    expect(config.routes[0]?.output).toEqual({
      mode: 'merge',
      field: 'result',
      overwrite: false,
      keys: 'python',
      returnFullText: true,
      subjectNaming: 'topic',
    });
    expect(config.shards).toEqual(['cpu']);
    expect(config.limits).toEqual({
      maxRecordBytes: 1_048_576,
      maxTextLength: 100_000,
      maxJsonDepth: 64,
      maxListItems: 256,
      maxStopSequences: 16,
      maxImagePixels: 25_000_000,
      maxImageBytes: 20_971_520,
      maxAudioBytes: 20_971_520,
      maxAudioSeconds: 600,
    });
  });

  it('reads ${VAR} and ${VAR:-default} from the environment', () => {
    const text = valid
      .replace('in.jsonl', '${INPUT}')
      .replace('out.jsonl', '${OUTPUT:-fallback.jsonl}');
    const config = parseConfigText(text, { INPUT: 'events.jsonl' });
    expect(config.routes[0]?.source).toEqual({ type: 'file', path: 'events.jsonl' });
    expect(config.routes[0]?.sink).toEqual({ type: 'file', path: 'fallback.jsonl' });
    expect(fails(text, {})).toMatch(/INPUT is not set/);
  });

  it('applies HUGOT__ overrides, parsing JSON values', () => {
    const config = parseConfigText(valid, {
      HUGOT__delivery__retries: '5',
      HUGOT__routes__0__pipeline: 'p',
    });
    expect(config.delivery.retries).toBe(5);
  });

  it('names the field and the problem', () => {
    expect(fails(valid.replace('type: file, path: in.jsonl', 'type: kafak, topic: t'))).toMatch(
      /routes\.0\.source\.type/,
    );
    expect(fails(valid.replace('model: m', 'model: missing'))).toMatch(
      /pipelines\.p\.model: no model 'missing'/,
    );
    expect(fails(valid.replace('pipeline: p', 'pipeline: nope'))).toMatch(
      /routes\.0\.pipeline: no pipeline 'nope'/,
    );
    expect(fails(`${valid}\nbogus: 1\n`)).toMatch(/bogus/);
    expect(
      fails(
        valid.replace('{ type: file, path: in.jsonl }', '{ type: kafka, topic: t, groupId: g }'),
      ),
    ).toMatch(/uses Kafka, but connections\.kafka is missing/);
    expect(fails(`${valid}delivery: { mode: exactly-once }\n`)).toMatch(
      /exactly-once works for Kafka -> Kafka routes only/,
    );
    expect(fails('models: [')).toMatch(/not valid YAML/);
  });

  const platformaticFeatures: DriverFeatures = {
    client: 'platformatic',
    stableOffsets: true,
    keepsPartitions: true,
    fencesByGeneration: true,
  };

  it('connections.kafka.client: platformatic or kafkajs; unset, platformatic in both modes', () => {
    const kafka = (client?: string): string =>
      `${valid}connections: { kafka: { brokers: [b:9092]${client === undefined ? '' : `, client: ${client}`} } }\n`;
    const unset = parseConfigText(kafka());
    expect(unset.connections.kafka?.client).toBeUndefined();
    expect(kafkaClientFor(unset)).toBe('platformatic');
    const exactlyOnce = {
      ...unset,
      delivery: { ...unset.delivery, mode: 'exactly-once' as const },
    };
    expect(kafkaClientFor(exactlyOnce)).toBe('platformatic');
    const chosen = parseConfigText(kafka('kafkajs'));
    expect(kafkaClientFor({ ...chosen, delivery: exactlyOnce.delivery })).toBe('kafkajs');
    expect(fallbacksOf('exactly-once', platformaticFeatures)).toEqual([]);
    expect(parseConfigText(kafka('platformatic')).connections.kafka?.client).toBe('platformatic');
    expect(fails(kafka('rdkafka'))).toMatch(
      /connections\.kafka\.client: 'rdkafka' is not allowed; expected one of platformatic, kafkajs/,
    );
  });
});
