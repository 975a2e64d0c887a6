// Adds a job to a BullMQ queue per record. Outputs: the job's data is the output JSON. Dead
// letters (whose bytes may be neither JSON nor UTF-8): {key, value | valueBase64, headers}, the
// headers carrying the hugot.error.* fields.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, connectRedis, type RedisTarget } from '../services/redis-connection.ts';
import { envelopeHeaders } from '../stream/headers.ts';
import type { OutputRecord } from '../stream/record.ts';
import type { Sink } from './sink.ts';

export interface BullmqSinkOptions {
  redis: RedisTarget;
  queue: string;
  jobName: string;
  /** Dead letters are written as an envelope that keeps the raw bytes and headers. */
  deadLetters: boolean;
}

export class BullmqSink implements Sink {
  private readonly options: BullmqSinkOptions;
  private readonly connection: Redis;
  private readonly queue: Queue;

  constructor(options: BullmqSinkOptions) {
    this.options = options;
    this.connection = connectRedis(options.redis, `hugot-bullmq-sink-${options.queue}`);
    this.queue = new Queue(options.queue, { connection: this.connection });
  }

  async write(record: OutputRecord): Promise<void> {
    const data = this.options.deadLetters
      ? envelopeOf(record)
      : (JSON.parse(record.value.toString('utf8')) as unknown);
    // Resolves once Redis has stored the job.
    await this.queue.add(this.options.jobName, data);
  }

  async close(): Promise<void> {
    await this.queue.close();
    await closeRedis(this.connection);
  }
}

export function envelopeOf(record: OutputRecord): Record<string, unknown> {
  const text = record.value.toString('utf8');
  const exact = Buffer.from(text, 'utf8').equals(record.value);
  return {
    key: record.key?.toString('utf8') ?? null,
    ...(exact ? { value: text } : { valueBase64: record.value.toString('base64') }),
    ...envelopeHeaders(record.headers),
  };
}
