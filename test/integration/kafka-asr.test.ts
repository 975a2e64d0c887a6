// Speech recognition over a real Kafka broker: audio records (base64 WAV in a JSON field) from an
// input topic through the tiny Whisper to an output topic, each transcript equal to Python's
// golden text for its clip; a corrupt clip and one over limits.maxAudioSeconds on the DLQ topic
// with the reason; the input offsets committed to the end.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { configSchema } from '../../src/config/schema.ts';
import { silentLogger } from '../../src/logger.ts';
import { StreamWorker } from '../../src/worker/stream-worker.ts';
import { readGoldens } from '../parity/goldens.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { toneWav } from '../helpers/tone-wav.ts';
import { KafkaKit, kafkaConnection } from './helpers/kafka-kit.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const MODEL = join(import.meta.dirname, '..', 'fixtures', 'models', 'whisper-speech-recognition');

describe('Kafka speech recognition route (real broker, tiny Whisper)', () => {
  it('transcribes audio records to the output topic and dead-letters bad audio', async () => {
    const golden = readGoldens('whisper-speech-recognition').pipeline.find(
      (g) => g.name === 'greedy_en',
    );
    const clips = (golden?.call.inputs ?? []) as string[];
    const expected = (golden?.output ?? []) as { text: string }[];
    expect(clips).toHaveLength(3);
    const input = uniqueName('asr-in');
    const output = uniqueName('asr-out');
    const dlq = uniqueName('asr-dlq');
    const groupId = uniqueName('asr-group');
    await kit.createTopics([
      { topic: input, partitions: 1 },
      { topic: output, partitions: 1 },
      { topic: dlq, partitions: 1 },
    ]);
    // Each clip twice, so a batch holds several records.
    const good = [...clips, ...clips].map((clip, i) => ({ clip, key: `clip-${i}` }));
    const messages = await Promise.all(
      good.map(async ({ clip, key }) => ({
        partition: 0,
        key,
        value: JSON.stringify({
          id: key,
          audio: (await readFile(join(MODEL, clip))).toString('base64'),
        }),
        headers: { trace: key },
      })),
    );
    const corrupt = Buffer.concat([
      Buffer.from('RIFF\x10\x00\x00\x00WAVEjunk'),
      Buffer.alloc(64, 9),
    ]);
    messages.splice(2, 0, {
      partition: 0,
      key: 'bad-corrupt',
      value: JSON.stringify({ id: 'corrupt', audio: corrupt.toString('base64') }),
      headers: { trace: 'corrupt' },
    });
    messages.splice(5, 0, {
      partition: 0,
      key: 'bad-long',
      value: JSON.stringify({ id: 'long', audio: toneWav(6).toString('base64') }),
      headers: { trace: 'long' },
    });
    await kit.produce(input, messages);

    const config = configSchema.parse({
      models: { whisper: { path: MODEL } },
      pipelines: {
        asr: {
          task: 'automaticSpeechRecognition',
          model: 'whisper',
          options: { language: 'en', task: 'transcribe', maxNewTokens: 20, numBeams: 1 },
        },
      },
      routes: [
        {
          name: 'transcribe',
          source: {
            type: 'kafka',
            topic: input,
            groupId,
            sessionTimeoutMs: 10_000,
            heartbeatIntervalMs: 1_000,
          },
          pipeline: 'asr',
          input: { field: 'audio' },
          output: { field: 'transcript' },
          sink: { type: 'kafka', topic: output },
          dlq: { type: 'kafka', topic: dlq },
        },
      ],
      shards: [{ device: 'cpu', threads: 1 }],
      batching: { maxBatchSize: 4, maxWaitMs: 20 },
      limits: { maxAudioSeconds: 5 },
      connections: { kafka: kafkaConnection(kit.brokers) },
      delivery: { mode: 'at-least-once', commitIntervalMs: 200 },
    });
    const worker = await StreamWorker.start(config, { logger: silentLogger });
    const [outputs, dead] = await Promise.all([
      kit.readAll(output, { count: good.length, quietMs: 500 }),
      kit.readAll(dlq, { count: 2, quietMs: 500 }),
    ]);
    await worker.stop(20_000);

    expect(outputs.map((o) => o.key)).toEqual(good.map((g) => g.key));
    outputs.forEach((out, i) => {
      const value = JSON.parse(out.value.toString('utf8')) as { transcript: { text: string } };
      expect(value.transcript, good[i]?.key).toEqual(expected[clips.indexOf(good[i]?.clip ?? '')]);
    });
    expect(dead.map((d) => d.key)).toEqual(['bad-corrupt', 'bad-long']);
    expect(dead[0]?.headers).toMatchObject({
      trace: 'corrupt',
      'hugot.error.stage': 'validate',
      'hugot.error.code': 'AUDIO_INVALID',
      'hugot.error.origin.topic': input,
    });
    expect(dead[0]?.headers['hugot.error.message']).toMatch(/not a readable WAV file/);
    expect(dead[1]?.headers).toMatchObject({
      trace: 'long',
      'hugot.error.code': 'AUDIO_TOO_LONG',
    });
    expect(dead[1]?.headers['hugot.error.message']).toMatch(/over limits.maxAudioSeconds \(5\)/);
    const committed = await kit.committedOffsets(groupId, input);
    expect(committed.get(0)).toBe((await kit.endOffsets(input)).get(0));
  });
});
