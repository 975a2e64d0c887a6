// Redis streams as the chaos scenarios see them from outside the worker: filling an input stream
// and reading an output stream's record ids, incrementally, across a Redis restart.
import { Redis } from 'ioredis';
import { idOf } from './routes.ts';

export class StreamReader {
  private after = '-';
  readonly ids = new Map<string, number>();
  entries = 0;

  private readonly stream: string;

  constructor(stream: string) {
    this.stream = stream;
  }

  /** Reads entries added since the last call; returns how many distinct ids were seen so far. */
  async poll(redis: Redis): Promise<number> {
    for (;;) {
      const start = this.after === '-' ? '-' : `(${this.after}`;
      const page = await redis.xrangeBuffer(this.stream, start, '+', 'COUNT', 2000);
      for (const [id, fields] of page) {
        this.after = id.toString();
        this.entries += 1;
        for (let i = 0; i + 1 < fields.length; i += 2)
          if (fields[i]?.toString() === 'value') {
            const key = idOf(fields[i + 1] ?? null);
            if (key !== undefined) this.ids.set(key, (this.ids.get(key) ?? 0) + 1);
          }
      }
      if (page.length < 2000) return this.ids.size;
    }
  }

  values(): string[] {
    return [...this.ids.entries()].flatMap(([id, n]) =>
      Array.from({ length: n }, () => `{"id":"${id}"}`),
    );
  }
}

/** A client that rides out a Redis restart (reconnects; commands wait for it). */
export function redisClient(url: string): Redis {
  const client = new Redis(url, { maxRetriesPerRequest: null, retryStrategy: () => 500 });
  client.on('error', () => undefined);
  return client;
}

export async function fillStream(
  redis: Redis,
  stream: string,
  values: readonly { key: string; value: string }[],
): Promise<void> {
  for (let i = 0; i < values.length; i += 1000) {
    const pipe = redis.pipeline();
    for (const v of values.slice(i, i + 1000))
      pipe.xadd(stream, '*', 'value', v.value, 'key', v.key);
    await pipe.exec();
  }
}
