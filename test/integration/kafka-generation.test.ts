// Generation requests from a Kafka topic through the stream worker's generative route (the model
// kit's tiny Llama on the generative engine) to an output topic, with streamed partial records:
// per request, partials with sequence numbers 0..n-1 in order on the final's partition, their
// deltas adding up to the final's text, the final's token ids and text equal to Python's greedy
// golden; a malformed request and one the engine refuses in the DLQ; offsets committed to the end.
// Exactly-once runs the same route with final records only (it refuses output.stream).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import type { FinalValue, PartialValue } from '../../src/route/generation-records.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaConnection, type ReadRecord } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const MODEL = join(import.meta.dirname, '..', 'fixtures', 'models', 'llama-causal-lm');
const goldens = (
  JSON.parse(readFileSync(join(MODEL, 'goldens.json'), 'utf8')) as {
    generation: {
      call: { prompt: unknown; options: { max_new_tokens: number } };
      new_ids: number[];
      text: string;
    }[];
  }
).generation.filter((g) => typeof g.call.prompt === 'string');
const MAX_NEW_TOKENS = 24;
const EVERY = 5;
const PARTITIONS = 2;

type Value = { completion: PartialValue | FinalValue; prompt?: string };

const CASES = [
  { mode: 'at-least-once', every: EVERY },
  { mode: 'exactly-once', every: 0 },
] as const;

describe.each(CASES)('Kafka generation route (real broker, tiny LM), $mode', ({ mode, every }) => {
  it(`${every > 0 ? 'streams partials in order before each final' : 'writes finals only'}, finals equal the goldens, bad requests go to the DLQ`, async () => {
    expect(goldens.length).toBeGreaterThanOrEqual(4);
    expect(goldens.every((g) => g.call.options.max_new_tokens === MAX_NEW_TOKENS)).toBe(true);
    const input = uniqueName('gen-in');
    const output = uniqueName('gen-out');
    const dlq = uniqueName('gen-dlq');
    const groupId = uniqueName('gen-group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 2 },
      { topic: dlq, partitions: 1 },
    ]);
    const requests = goldens.map((g, i) => ({
      partition: i % PARTITIONS,
      key: `req-${i}`,
      value: JSON.stringify({ prompt: g.call.prompt }),
      headers: { trace: `t-${i}` },
    }));
    // Between the good ones: a record that is not JSON, and one no KV budget can ever hold.
    requests.splice(1, 0, {
      partition: 1,
      key: 'bad-json',
      value: '{"prompt": "Hello',
      headers: { trace: 'bad-json' },
    });
    requests.splice(3, 0, {
      partition: 0,
      key: 'bad-fit',
      value: JSON.stringify({ prompt: 'Hello there', options: { maxNewTokens: 100_000 } }),
      headers: { trace: 'bad-fit' },
    });
    await kit.produce(input, requests);
    // Offsets per input partition, in produce order: the derived request ids.
    const requestIdOf = new Map<string, string>();
    const next = new Map<number, number>();
    for (const r of requests) {
      const offset = next.get(r.partition) ?? 0;
      next.set(r.partition, offset + 1);
      requestIdOf.set(r.key, `${input}-${r.partition}-${offset}`);
    }

    const config = configSchema.parse({
      models: { lm: { path: MODEL } },
      pipelines: {
        write: {
          task: 'textGeneration',
          model: 'lm',
          options: { maxNewTokens: MAX_NEW_TOKENS },
          generative: {
            threads: 1,
            intraOpThreads: 1,
            maxActive: 4,
            stepTokens: 32,
            maxKvTokens: 512,
          },
        },
      },
      routes: [
        {
          name: 'generate',
          source: {
            type: 'kafka',
            topic: input,
            groupId,
            sessionTimeoutMs: 10_000,
            heartbeatIntervalMs: 1_000,
          },
          pipeline: 'write',
          input: { field: 'prompt' },
          output: { mode: 'merge', field: 'completion', stream: { everyTokens: every } },
          generation: { timeoutMs: 30_000, optionsField: 'options' },
          sink: { type: 'kafka', topic: output },
          dlq: { type: 'kafka', topic: dlq },
        },
      ],
      connections: { kafka: kafkaConnection(kit.brokers) },
      delivery: { mode, commitIntervalMs: 200 },
    });
    const started = performance.now();
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const perRequest = every > 0 ? Math.floor(MAX_NEW_TOKENS / every) + 1 : 1;
    const readCommitted = mode === 'exactly-once';
    // Both topics at once: each reader's group join takes seconds.
    const [outputs, dead] = await Promise.all([
      kit.readAll(output, { count: goldens.length * perRequest, quietMs: 500, readCommitted }),
      kit.readAll(dlq, { count: 2, quietMs: 500, readCommitted }),
    ]);
    await worker.stop(20_000);
    const seconds = (performance.now() - started) / 1000;
    // Reported, not asserted: on a loaded machine the time says nothing about correctness, and a
    // stuck request fails readAll's progress bound instead.
    process.stdout.write(`[kafka generation ${mode}] ${seconds.toFixed(1)} s\n`);

    expect(outputs).toHaveLength(goldens.length * perRequest);
    const byKey = new Map<string, ReadRecord[]>();
    for (const out of outputs) byKey.set(out.key ?? '', [...(byKey.get(out.key ?? '') ?? []), out]);
    goldens.forEach((golden, i) => {
      const key = `req-${i}`;
      const records = byKey.get(key) ?? [];
      expect(records, key).toHaveLength(perRequest);
      // One output partition per key, and offsets in the order the worker wrote them.
      expect(new Set(records.map((r) => r.partition)).size).toBe(1);
      records.sort((a, b) => Number(BigInt(a.offset) - BigInt(b.offset)));
      const values = records.map((r) => (JSON.parse(r.value.toString('utf8')) as Value).completion);
      expect(values.map((v) => v.sequence)).toEqual([...Array(perRequest).keys()]);
      expect(values.map((v) => v.final)).toEqual(values.map((_, n) => n === perRequest - 1));
      expect(new Set(values.map((v) => v.requestId))).toEqual(new Set([requestIdOf.get(key)]));
      expect(records.every((r) => r.headers['trace'] === `t-${i}`)).toBe(true);
      const final = values.at(-1) as FinalValue;
      expect(final.tokenIds).toEqual(golden.new_ids);
      expect(final.text).toBe(golden.text);
      expect(final).toMatchObject({ finishReason: 'length', generatedTokens: MAX_NEW_TOKENS });
      expect(values.map((v) => v.delta).join('')).toBe(final.text);
      // The final merges into the request; partials carry only the completion.
      const finalRecord = JSON.parse((records.at(-1) as ReadRecord).value.toString()) as Value;
      expect(finalRecord.prompt).toBe(golden.call.prompt);
      if (perRequest > 1)
        expect(
          Object.keys(JSON.parse((records[0] as ReadRecord).value.toString()) as object),
        ).toEqual(['completion']);
    });

    expect(dead.map((d) => d.key).sort()).toEqual(['bad-fit', 'bad-json']);
    const codes = Object.fromEntries(
      dead.map((d): [string, string | undefined] => [d.key ?? '', d.headers['hugot.error.code']]),
    );
    expect(codes).toEqual({ 'bad-json': 'INVALID_JSON', 'bad-fit': 'INPUT_INVALID' });

    const committed = await kit.committedOffsets(groupId, input);
    const ends = await kit.endOffsets(input);
    for (let p = 0; p < PARTITIONS; p += 1) expect(committed.get(p)).toBe(ends.get(p));
  });
});
