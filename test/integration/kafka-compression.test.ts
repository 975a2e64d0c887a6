// Topics written with every compression codec Kafka has: by kafkajs (with the codecs this project
// registers, test/unit/connectors/kafka/compression-codecs.test.ts) and by the Java client itself (its own
// snappy/lz4/zstd framing). The worker reads every record and writes every output, on either Kafka
// client (the file is in vitest's client matrix); before the codecs were registered, the first
// snappy, lz4 or zstd batch crashed a kafkajs consumer and the worker sat idle.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { CompressionTypes } from 'kafkajs';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { defaultCacheDir, installKafka } from '../../scripts/services/kafka-local.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const PER_CODEC = 200;
const CODECS = [
  ['gzip', CompressionTypes.GZIP],
  ['snappy', CompressionTypes.Snappy],
  ['lz4', CompressionTypes.LZ4],
  ['zstd', CompressionTypes.ZSTD],
] as const;

function javaProduce(topic: string, codec: string, count: number, prefix: string): void {
  const lib = installKafka({ cacheDir: defaultCacheDir() });
  execFileSync(
    'java',
    [
      '-cp',
      `${lib}/*`,
      join(import.meta.dirname, 'helpers', 'JavaProducer.java'),
      kit.brokers,
      topic,
      codec,
      String(count),
      prefix,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

describe('compressed topics (real broker, kafkajs and Java producers)', () => {
  it('processes records of every codec, written by kafkajs and by the Java client', async () => {
    const input = uniqueName('compressed-in');
    const output = uniqueName('compressed-out');
    await kit.createTopics([
      { topic: input, partitions: 2 },
      { topic: output, partitions: 1 },
    ]);
    for (const [name] of CODECS) javaProduce(input, name, PER_CODEC, `java-${name}-`);
    const expected = CODECS.length * PER_CODEC * 2;
    const config = configSchema.parse(
      kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId: uniqueName('group') }),
    );
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const producer = kit.kafka.producer();
    await producer.connect();
    try {
      for (const [name, type] of CODECS) {
        const messages = Array.from({ length: PER_CODEC }, (_, i) => ({
          key: `js-${name}-${i}`,
          value: JSON.stringify({ id: `js-${name}-${i}`, text: `kafkajs ${name} record ${i}` }),
        }));
        await producer.send({ topic: input, compression: type, acks: -1, messages });
      }
    } finally {
      await producer.disconnect();
    }
    try {
      const outputs = await kit.readAll(output, { count: expected, quietMs: 500 });
      const ids = new Set(
        outputs.map((o) => (JSON.parse(o.value.toString('utf8')) as { id: string }).id),
      );
      expect(ids.size).toBe(expected);
      for (const [name] of CODECS) {
        for (const origin of ['js', 'java'])
          for (const i of [0, PER_CODEC - 1]) expect(ids).toContain(`${origin}-${name}-${i}`);
      }
      const first = JSON.parse(outputs[0]?.value.toString('utf8') ?? '{}') as {
        result?: { label: string }[];
      };
      expect(first.result?.[0]?.label).toEqual(expect.any(String));
    } finally {
      await worker.stop(20_000);
    }
    expect(worker.counters()['classify']).toMatchObject({ written: expected, deadLettered: 0 });
  });
});
