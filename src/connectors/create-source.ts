// Source type in the config -> the class that reads it.
import { BullmqSource } from './redis/bullmq-source.ts';
import { FileSource } from './file/file-source.ts';
import { KafkaSource } from './kafka/kafka-source.ts';
import { RedisStreamSource } from './redis/redis-stream-source.ts';
import type { Connections } from './connections.ts';
import type { Source, SourceDeps } from './source.ts';

/** Each source gets the one connection it reads through; none sees the others. */
export function createSource(deps: SourceDeps, connections: Connections): Source {
  const source = deps.route.source;
  switch (source.type) {
    case 'file':
      return new FileSource(source.path, deps);
    case 'bullmq':
      return new BullmqSource(
        { queue: source.queue, concurrency: source.concurrency },
        deps,
        connections.redis('source'),
      );
    case 'redis-stream':
      return new RedisStreamSource(source, deps, connections.redis('source'));
    case 'kafka':
      return new KafkaSource(source, deps, connections.kafka('source'));
  }
}
