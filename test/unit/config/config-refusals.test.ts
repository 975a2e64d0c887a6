import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load-config.ts';
import { ConfigError } from '../../../src/errors.ts';
import { thrownBy } from '../../helpers/thrown.ts';

const MODEL = join(import.meta.dirname, '..', '..', '..', 'models', 'all-MiniLM-L6-v2-int8');

function config(route: string): string {
  return `
models:
  minilm: { path: ${MODEL} }
pipelines:
  embed: { task: featureExtraction, model: minilm }
connections:
  kafka: { brokers: ['127.0.0.1:9092'] }
  redis: { url: 'redis://127.0.0.1:6379' }
routes:
  - ${route}
`;
}

function problemOf(route: string): ConfigError {
  return thrownBy(ConfigError, () => parseConfigText(config(route), {}));
}

describe('a route that feeds itself', () => {
  it('is refused when its dlq is its own Kafka input topic', () => {
    const err = problemOf(
      `{ source: { type: kafka, topic: mails, groupId: g }, pipeline: embed, sink: { type: kafka, topic: out }, dlq: { type: kafka, topic: mails } }`,
    );
    expect(err.field).toBe('routes.0.dlq');
    expect(err.message).toContain(
      "routes.0.dlq sends dead letters to the route's own input (Kafka topic 'mails')",
    );
    expect(err.message).toContain('point dlq at another destination');
  });

  it('is refused when its sink is its own input, for every kind of source', () => {
    for (const [source, sink, words] of [
      ['{ type: bullmq, queue: jobs }', '{ type: bullmq, queue: jobs }', "BullMQ queue 'jobs'"],
      [
        '{ type: redis-stream, stream: docs, group: g }',
        '{ type: redis-stream, stream: docs }',
        "Redis stream 'docs'",
      ],
      ['{ type: file, path: in.jsonl }', '{ type: file, path: ./in.jsonl }', 'file '],
    ] as const) {
      const err = problemOf(`{ source: ${source}, pipeline: embed, sink: ${sink} }`);
      expect(err.field, source).toBe('routes.0.sink');
      expect(err.message, source).toContain(`writes to the route's own input (${words}`);
    }
  });

  it('accepts a route whose ends differ, and stdin to stdout', () => {
    expect(() =>
      parseConfigText(
        config(
          `{ source: { type: kafka, topic: mails, groupId: g }, pipeline: embed, sink: { type: kafka, topic: out }, dlq: { type: kafka, topic: mails-dlq } }`,
        ),
        {},
      ),
    ).not.toThrow();
    expect(() =>
      parseConfigText(
        config(
          `{ source: { type: file, path: '-' }, pipeline: embed, sink: { type: file, path: '-' } }`,
        ),
        {},
      ),
    ).not.toThrow();
  });
});

describe('a broker string with credentials', () => {
  it('is refused without echoing the password', () => {
    const text = config(
      `{ source: { type: kafka, topic: mails, groupId: g }, pipeline: embed, sink: { type: kafka, topic: out } }`,
    ).replace("brokers: ['127.0.0.1:9092']", "brokers: ['alice:s3cret-pw@127.0.0.1:9092']");
    let message = '';
    try {
      parseConfigText(text, {});
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      message = (err as ConfigError).message;
    }
    expect(message).toContain('connections.kafka.brokers.0: a broker is host:port');
    expect(message).toContain('connections.kafka.sasl');
    expect(message).not.toContain('s3cret-pw');
  });
});
