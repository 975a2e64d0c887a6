// Adds a job to a BullMQ queue per record. Outputs: the job's data is the output JSON. Dead
// letters (whose bytes may be neither JSON nor UTF-8): {key, value | valueBase64, headers}, the
// headers carrying the hugot.error.* fields. A job has no headers, so an output object carries
// the record's W3C trace context as `traceparent` / `tracestate` fields, which is where the BullMQ
// source reads a caller's trace context from: a trace continues across a BullMQ hop.
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { closeRedis, connectRedis, type RedisTarget } from './redis-connection.ts';
import { reportRedisOutages } from './redis-outage-reporter.ts';
import type { ConnectionHealth } from '../connection-health.ts';
import { envelopeHeaders } from '../../route/headers.ts';
import type { Headers, OutputRecord } from '../../route/record.ts';
import type { Sink } from '../../route/sink.ts';

export interface BullmqSinkOptions {
  redis: RedisTarget;
  queue: string;
  jobName: string;
  /** Dead letters are written as an envelope that keeps the raw bytes and headers. */
  deadLetters: boolean;
  /** Hears Redis outages: writes wait them out (maxRetriesPerRequest: null). */
  onHealth?: ((health: ConnectionHealth) => void) | undefined;
}

export class BullmqSink implements Sink {
  private readonly options: BullmqSinkOptions;
  private readonly connection: Redis;
  private readonly queue: Queue;
  private readonly unwatch: () => void;
  private closing = false;

  constructor(options: BullmqSinkOptions) {
    this.options = options;
    this.connection = connectRedis(options.redis, `hugot-bullmq-sink-${options.queue}`);
    this.queue = new Queue(options.queue, { connection: this.connection });
    this.unwatch = reportRedisOutages(this.connection, {
      reason: `Redis unreachable (BullMQ queue ${options.queue})`,
      onHealth: options.onHealth,
      stopping: () => this.closing,
    });
  }

  async write(record: OutputRecord): Promise<void> {
    const data = this.options.deadLetters
      ? envelopeOf(record)
      : withTraceContext(JSON.parse(record.value.toString('utf8')) as unknown, record.headers);
    // Resolves once Redis has stored the job.
    await this.queue.add(this.options.jobName, data);
  }

  async close(): Promise<void> {
    this.closing = true;
    this.unwatch();
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

const TRACE_FIELDS = ['traceparent', 'tracestate'] as const;

/** The output object with the record's trace context fields; other JSON values as they are. */
export function withTraceContext(data: unknown, headers: Headers): unknown {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return data;
  const fields: Record<string, string> = {};
  for (const name of TRACE_FIELDS) {
    const value = headers[name];
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) fields[name] = first.toString();
  }
  return Object.keys(fields).length === 0 ? data : { ...data, ...fields };
}
