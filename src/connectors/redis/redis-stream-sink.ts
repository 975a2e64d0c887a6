// XADD per record. Entry layout (the same one the Redis Streams source reads): field `value`
// holds the record bytes as they are (a dead letter's may be neither JSON nor UTF-8), field `key`
// the key when there is one, and every header is a field of its own. A header that happens to be
// named `value` or `key` is written as `header.value` / `header.key` so it cannot shadow them.
import type { Redis } from 'ioredis';
import {
  closeRedis,
  connectRedis,
  isAbortedByClose,
  type RedisTarget,
} from './redis-connection.ts';
import { reportRedisOutages } from './redis-outage-reporter.ts';
import type { ConnectionHealth } from '../connection-health.ts';
import { headerPairs } from '../../route/headers.ts';
import type { OutputRecord } from '../../route/record.ts';
import type { Sink } from '../../route/sink.ts';

export interface RedisStreamSinkOptions {
  redis: RedisTarget;
  stream: string;
  /** Trims the stream to about this many entries (MAXLEN ~): Redis trims whole nodes, cheaply. */
  maxLength?: number;
  /** Hears Redis outages: writes wait them out (maxRetriesPerRequest: null). */
  onHealth?: ((health: ConnectionHealth) => void) | undefined;
}

export const RESERVED_FIELDS: ReadonlySet<string> = new Set(['value', 'key']);

export class RedisStreamSink implements Sink {
  private readonly options: RedisStreamSinkOptions;
  private readonly client: Redis;
  private readonly unwatch: () => void;
  private closing = false;
  private retried = 0;

  constructor(options: RedisStreamSinkOptions) {
    this.options = options;
    this.client = connectRedis(options.redis, `hugot-stream-sink-${options.stream}`, {
      autoPipelining: true,
    });
    this.unwatch = reportRedisOutages(this.client, {
      reason: `Redis unreachable (stream ${options.stream})`,
      onHealth: options.onHealth,
      stopping: () => this.closing,
    });
  }

  async write(record: OutputRecord): Promise<void> {
    const args: (string | Buffer | number)[] = [];
    if (this.options.maxLength !== undefined) args.push('MAXLEN', '~', this.options.maxLength);
    args.push('*', 'value', record.value);
    if (record.key !== null) args.push('key', record.key);
    // A repeated header becomes a repeated field; bytes go as they are.
    for (const [name, value] of headerPairs(record.headers)) {
      args.push(RESERVED_FIELDS.has(name) ? `header.${name}` : name, value);
    }
    for (;;) {
      try {
        await this.client.xadd(this.options.stream, ...args);
        return;
      } catch (err) {
        // Auto-pipelining's price: ioredis resends a plain command that a closed connection left
        // unanswered, but rejects the unanswered rest of a partly answered pipeline, since it
        // cannot tell which of those ran. Such an output may be in the stream already; writing it
        // again is at least once, where failing it left its input pending until a reclaim ran
        // the whole record again. The retry waits in the offline queue for the reconnect.
        if (this.closing || !isAbortedByClose(err)) throw err;
        this.retried += 1;
      }
    }
  }

  /** Writes sent again after a connection cut aborted them (see write). */
  get retriedAfterCut(): number {
    return this.retried;
  }

  async close(): Promise<void> {
    this.closing = true;
    this.unwatch();
    await closeRedis(this.client);
  }
}
