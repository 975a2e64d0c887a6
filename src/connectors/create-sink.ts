// Sink type in the config -> the class that writes it.
import type { SinkConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import type { ConnectionHealth } from './connection-health.ts';
import type { Connections } from './connections.ts';
import { BullmqSink } from './redis/bullmq-sink.ts';
import { FileSink } from './file/file-sink.ts';
import { KafkaSink } from './kafka/kafka-sink.ts';
import { RedisStreamSink } from './redis/redis-stream-sink.ts';
import type { Sink } from '../route/sink.ts';

export interface SinkContext {
  connections: Connections;
  logger: Logger;
  /** Dead letters keep headers and raw bytes; outputs are written as their value. */
  deadLetters: boolean;
  /** Hears the sink's connection state (sinks that hold a connection: Kafka, Redis). */
  onHealth?: ((health: ConnectionHealth) => void) | undefined;
}

/** Whether the sink holds a broker connection whose outages it reports. */
export function sinkConnects(sink: SinkConfig): boolean {
  return sink.type === 'kafka' || sink.type === 'bullmq' || sink.type === 'redis-stream';
}

export function createSink(sink: SinkConfig, context: SinkContext): Sink | undefined {
  switch (sink.type) {
    case 'file':
      return new FileSink(sink.path, context.deadLetters);
    case 'bullmq-result':
      // The BullMQ source returns the output as the job's result; nothing else to write.
      return undefined;
    case 'bullmq':
      return new BullmqSink({
        redis: context.connections.redis('sink'),
        queue: sink.queue,
        jobName: sink.jobName,
        deadLetters: context.deadLetters,
        onHealth: context.onHealth,
      });
    case 'redis-stream':
      return new RedisStreamSink({
        redis: context.connections.redis('sink'),
        stream: sink.stream,
        ...(sink.maxLength !== undefined ? { maxLength: sink.maxLength } : {}),
        onHealth: context.onHealth,
      });
    case 'kafka':
      return new KafkaSink(sink.topic, context.connections.kafka('sink').producer(), {
        maxRecordBytes: sink.maxMessageBytes,
        onHealth: context.onHealth,
      });
  }
}
