// Refused records on a Kafka route go to the DLQ topic with their bytes, key and headers kept and
// hugot.error.* headers saying why, while the good records around them are still processed.
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

const BAD: { name: string; value: Buffer | null; stage: string; code: string }[] = [
  {
    name: 'tombstone',
    value: null,
    stage: 'decode',
    code: 'TOMBSTONE',
  },
  {
    name: 'malformed',
    value: Buffer.from('{"id": "x", "text": '),
    stage: 'decode',
    code: 'INVALID_JSON',
  },
  {
    name: 'missing',
    value: Buffer.from('{"id":"m","body":"no text field"}'),
    stage: 'validate',
    code: 'FIELD_MISSING',
  },
  {
    name: 'wrongtype',
    value: Buffer.from('{"id":"w","text":42}'),
    stage: 'validate',
    code: 'WRONG_TYPE',
  },
  {
    name: 'oversized',
    value: Buffer.from(JSON.stringify({ id: 'o', text: 'spam '.repeat(20_000) })),
    stage: 'validate',
    code: 'RECORD_TOO_LARGE',
  },
  {
    name: 'utf8',
    value: Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    stage: 'decode',
    code: 'INVALID_UTF8',
  },
];

describe.each(['at-least-once', 'exactly-once'] as const)('Kafka DLQ, %s', (mode) => {
  it('dead-letters each kind of bad record with headers and keeps processing good ones', async () => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const dlq = uniqueName('dlq');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
      { topic: dlq, partitions: 1 },
    ]);
    const good = corpusRecords(200);
    // Bad records sit between good ones, so a stall after the first one would show.
    const messages: {
      partition: number;
      key: string;
      value: Buffer | string | null;
      headers: Record<string, string>;
    }[] = good.map((r) => ({
      partition: 0,
      key: r.id,
      value: JSON.stringify(r),
      headers: { trace: r.id },
    }));
    BAD.forEach((bad, i) =>
      messages.splice(20 + i * 30, 0, {
        partition: 0,
        key: `bad-${bad.name}`,
        value: bad.value,
        headers: { trace: bad.name },
      }),
    );
    await kit.produce(input, messages);
    const offsetOf = new Map<string, number>(messages.map((m, i) => [m.key, i]));

    const config = configSchema.parse(
      kafkaRouteConfig({
        brokers: kit.brokers,
        input,
        output,
        dlq,
        groupId,
        mode,
        limits: { maxRecordBytes: 65_536 },
      }),
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const readCommitted = mode === 'exactly-once';
    const outputs = await kit.readAll(output, { count: good.length, readCommitted, quietMs: 500 });
    const dead = await kit.readAll(dlq, { count: BAD.length, readCommitted, quietMs: 500 });
    await worker.stop(20_000);

    expect(outputs.map((o) => o.key)).toEqual(good.map((r) => r.id));
    expect(dead).toHaveLength(BAD.length);
    for (const bad of BAD) {
      const letter = dead.find((d) => d.key === `bad-${bad.name}`);
      expect(letter, bad.name).toBeDefined();
      if (letter === undefined) continue;
      // A tombstone's dead letter is a tombstone again, not an empty value.
      expect(letter.tombstone, `${bad.name} tombstone`).toBe(bad.value === null);
      if (bad.value !== null)
        expect(letter.value.equals(bad.value), `${bad.name} bytes`).toBe(true);
      expect(letter.headers).toMatchObject({
        trace: bad.name,
        'hugot.error.stage': bad.stage,
        'hugot.error.code': bad.code,
        'hugot.error.origin.kind': 'kafka',
        'hugot.error.origin.topic': input,
        'hugot.error.origin.partition': '0',
        'hugot.error.origin.offset': String(offsetOf.get(`bad-${bad.name}`)),
      });
      expect(letter.headers['hugot.error.message']?.length).toBeGreaterThan(0);
      expect(letter.headers['hugot.error.worker.id']).toMatch(/-\d+$/);
    }
    const committed = await kit.committedOffsets(groupId, input);
    const end = (await kit.endOffsets(input)).get(0);
    expect(committed.get(0)).toBe(end);
  });
});
