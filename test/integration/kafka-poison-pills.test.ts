// Poison pills on a Kafka route, against a real broker: a record nested 10,000 levels deep and a
// record whose output is too large for the output topic are each dead-lettered with the reason;
// the partition never stalls (its offset is committed to the end), the good records around them
// are written once each, in order, and every input header (bytes that are not UTF-8, a repeated
// name) reaches the output and the DLQ as it came.
import type { Producer, ProducerRecord } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig, type ReadRecord } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

const BINARY = Buffer.from([0xff, 0x00, 0xfe, 0x80]);
const DEEP = 10_000;

async function committedToEnd(groupId: string, topic: string): Promise<void> {
  const end = (await kit.endOffsets(topic)).get(0);
  // The commit moves while records are handled; a stall stops it. A group coordinator still
  // loading answers with a retriable error: the probe throws and is asked again.
  await waitForProgress(async () => (await kit.committedOffsets(groupId, topic)).get(0), {
    what: `the commit of ${topic} to its end (${end})`,
    done: (committed) => committed === end,
    // The first commit waits for the group join and the first batch.
    firstProgressMs: 120_000,
  });
}

/**
 * A topic just created may not be hosted by its leader yet (a retriable error): the send is
 * tried again until it goes through. There is nothing to count while the leader catches up, so
 * the bound is the stall bound on the one event; an error that cannot be retried fails at once.
 * The retriable answers expected here (the partition not hosted by its leader yet) mean the
 * batch was not written, so a retry does not duplicate records (the test would see it).
 */
async function sendWhenWritable(producer: Producer, record: ProducerRecord): Promise<void> {
  let fatal: Error | undefined;
  await waitForProgress(
    async () => {
      try {
        await producer.send(record);
        return 'sent';
      } catch (err) {
        if ((err as { retriable?: boolean }).retriable !== true) {
          fatal = err instanceof Error ? err : new Error(String(err));
          return 'failed';
        }
        throw err;
      }
    },
    {
      what: `the first send to ${record.topic}`,
      done: (state) => state !== undefined,
      intervalMs: 250,
    },
  );
  if (fatal !== undefined) throw fatal;
}

describe.each([
  // The sink knows the limit: the output is refused before it is sent.
  { name: 'sink limit', sinkMax: 32_768, topicMax: undefined, code: 'OUTPUT_TOO_LARGE' },
  // The topic's limit is lower than the sink was told: the broker refuses the send.
  { name: 'broker limit', sinkMax: undefined, topicMax: 32_768, code: 'OUTPUT_REJECTED' },
])('Kafka poison pills ($name)', ({ sinkMax, topicMax, code }) => {
  it('dead-letters the pills with the reason; the partition goes on and outputs stay faithful', async () => {
    const input = uniqueName('pills-in');
    const output = uniqueName('pills-out');
    const dlq = uniqueName('pills-dlq');
    const groupId = uniqueName('pills');
    await kit.withAdmin(async (admin) => {
      await admin.createTopics({
        waitForLeaders: true,
        topics: [
          { topic: input, numPartitions: 1 },
          {
            topic: output,
            numPartitions: 1,
            ...(topicMax !== undefined
              ? { configEntries: [{ name: 'max.message.bytes', value: String(topicMax) }] }
              : {}),
          },
          { topic: dlq, numPartitions: 1 },
        ],
      });
    });
    const good = corpusRecords(40).map((r) => ({ key: r.id, value: JSON.stringify(r) }));
    const pills = [
      {
        key: 'deep',
        value: `{"id":"deep","text":"hello","x":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}`,
      },
      // Fine as an input (well under maxRecordBytes); merged with its result, too large to write.
      { key: 'big', value: JSON.stringify({ id: 'big', text: 'spam '.repeat(10_000) }) },
    ];
    const messages = [...good];
    messages.splice(10, 0, pills[0] as (typeof good)[number]);
    messages.splice(25, 0, pills[1] as (typeof good)[number]);
    const producer = kit.kafka.producer();
    await producer.connect();
    await sendWhenWritable(producer, {
      topic: input,
      acks: -1,
      messages: messages.map((m) => ({
        partition: 0,
        key: m.key,
        value: m.value,
        headers: { trace: m.key, bin: BINARY, twice: [Buffer.from('one'), Buffer.from('two')] },
      })),
    });
    await producer.disconnect();

    const raw = kafkaRouteConfig({ brokers: kit.brokers, input, output, dlq, groupId });
    const route = (raw['routes'] as Record<string, unknown>[])[0] as Record<string, unknown>;
    route['output'] = { field: 'labels' };
    if (sinkMax !== undefined)
      route['sink'] = { type: 'kafka', topic: output, maxMessageBytes: sinkMax };
    const worker = await StreamWorker.start(configSchema.parse(raw), { logger: silentLogger });
    let outputs: ReadRecord[];
    let dead: ReadRecord[];
    try {
      await committedToEnd(groupId, input);
      outputs = await kit.readAll(output, { count: good.length, quietMs: 500 });
      dead = await kit.readAll(dlq, { count: pills.length, quietMs: 500 });
    } finally {
      await worker.stop(20_000);
    }

    // Each good record once, in order, its bytes kept with the result beside them.
    expect(outputs.map((o) => o.key)).toEqual(good.map((g) => g.key));
    outputs.forEach((o, i) => {
      const original = (good[i] as (typeof good)[number]).value;
      expect(o.value.toString().startsWith(original.slice(0, -1))).toBe(true);
      expect(o.value.toString().slice(original.length - 1)).toMatch(/^,"labels":\[.*\]\}$/);
    });
    expect(dead.map((d) => [d.key, d.headers['hugot.error.code']])).toEqual([
      ['deep', 'JSON_TOO_DEEP'],
      ['big', code],
    ]);
    for (const letter of dead) {
      const pill = pills.find((p) => p.key === letter.key) as (typeof pills)[number];
      expect(letter.value.toString()).toBe(pill.value);
      expect(letter.headers['hugot.error.message']?.length).toBeGreaterThan(10);
    }
    expect(dead[1]?.headers['hugot.error.stage']).toBe('sink');
    // The broker's own answer, not the client's "Producing messages failed".
    if (code === 'OUTPUT_REJECTED')
      expect(dead[1]?.headers['hugot.error.message']).toMatch(
        /refused the output: MESSAGE_TOO_LARGE \(error code 10\): /,
      );
    // Headers as they came, on outputs and dead letters alike.
    for (const record of [...outputs, ...dead]) {
      expect(Buffer.from(record.rawHeaders['bin'] as Buffer).equals(BINARY)).toBe(true);
      expect((record.rawHeaders['twice'] as Buffer[]).map(String)).toEqual(['one', 'two']);
    }
    expect(worker.counters()['classify']).toMatchObject({ written: good.length, deadLettered: 2 });
  });
});
