// Structured output on a Kafka route (real broker, the model kit's tiny LM on the generative
// engine): every request that finishes carries a completion that parses as JSON and matches the
// schema, also with a sampled one; a request whose own options cut it short mid-object is
// dead-lettered with OUTPUT_INVALID; offsets are committed to the end of the input.
import { join } from 'node:path';
import Ajv from 'ajv';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const MODEL = join(import.meta.dirname, '..', 'fixtures', 'models', 'llama-causal-lm');
const schema = {
  type: 'object',
  properties: {
    label: { enum: ['spam', 'ham', 'other'] },
    priority: { type: 'integer' },
    tags: { type: 'array', items: { type: 'string', maxLength: 5 }, maxItems: 2 },
  },
  required: ['label', 'priority', 'tags'],
};
const validate = new Ajv().compile(schema);
const TEXTS = [
  'Win a free cruise, reply now',
  'The quarterly report is attached',
  'Your parcel is waiting at the depot',
  'Lunch on Friday?',
  'URGENT: verify your account',
  'Minutes of the planning meeting',
];

interface Completion {
  text: string;
  json?: unknown;
  finishReason: string;
}

describe('Kafka structured-output route (real broker, tiny LM)', () => {
  it('writes schema-valid JSON for every finished request and dead-letters one cut short', async () => {
    const input = uniqueName('json-in');
    const output = uniqueName('json-out');
    const dlq = uniqueName('json-dlq');
    const groupId = uniqueName('json-group');
    await kit.createTopics([
      { topic: input, partitions: 2 },
      { topic: output, partitions: 1 },
      { topic: dlq, partitions: 1 },
    ]);
    const requests = TEXTS.map((text, i) => ({
      partition: i % 2,
      key: `req-${i}`,
      // One request samples: the mask must hold for sampled tokens as for greedy ones.
      value: JSON.stringify({ text, ...(i === 2 ? { gen: { temperature: 1.3, seed: 7 } } : {}) }),
    }));
    requests.push({
      partition: 1,
      key: 'cut-short',
      value: JSON.stringify({ text: 'Too few tokens', gen: { maxNewTokens: 4 } }),
    });
    await kit.produce(input, requests);

    const config = configSchema.parse({
      models: { lm: { path: MODEL } },
      pipelines: {
        label: {
          task: 'textGeneration',
          model: 'lm',
          options: { maxNewTokens: 96, responseFormat: { type: 'json_schema', schema } },
          generative: { threads: 1, intraOpThreads: 1, maxActive: 4, maxKvTokens: 1024 },
        },
      },
      routes: [
        {
          name: 'label',
          source: {
            type: 'kafka',
            topic: input,
            groupId,
            sessionTimeoutMs: 10_000,
            heartbeatIntervalMs: 1_000,
          },
          pipeline: 'label',
          input: { field: 'text' },
          // Our own keys: the structured-output mechanics (text, json, finishReason) are checked here.
          output: { mode: 'merge', field: 'completion', keys: 'hugot' },
          generation: { timeoutMs: 60_000, optionsField: 'gen' },
          sink: { type: 'kafka', topic: output },
          dlq: { type: 'kafka', topic: dlq },
        },
      ],
      connections: { kafka: { brokers: kit.brokers.split(',') } },
      delivery: { mode: 'at-least-once', commitIntervalMs: 200 },
    });
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const [outputs, dead] = await Promise.all([
      kit.readAll(output, { count: TEXTS.length, quietMs: 500 }),
      kit.readAll(dlq, { count: 1, quietMs: 500 }),
    ]);
    await worker.stop(20_000);

    expect(outputs.map((o) => o.key).sort()).toEqual(TEXTS.map((_, i) => `req-${i}`).sort());
    for (const out of outputs) {
      const { completion, text } = JSON.parse(out.value.toString('utf8')) as {
        completion: Completion;
        text: string;
      };
      expect(TEXTS).toContain(text);
      const parsed = JSON.parse(completion.text) as unknown;
      expect(validate(parsed), completion.text).toBe(true);
      expect(completion.json).toEqual(parsed);
      // Complete objects end by the forced EOS, not by running out of tokens.
      expect(completion.finishReason).toBe('eos');
    }
    expect(dead.map((d) => d.key)).toEqual(['cut-short']);
    expect(dead[0]?.headers).toMatchObject({
      'hugot.error.stage': 'output',
      'hugot.error.code': 'OUTPUT_INVALID',
    });
    const committed = await kit.committedOffsets(groupId, input);
    const ends = await kit.endOffsets(input);
    for (const p of [0, 1]) expect(committed.get(p)).toBe(ends.get(p));
  });
});
