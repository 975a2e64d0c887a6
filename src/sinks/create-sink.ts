// Sink type in the config -> the class that writes it.
import type { SinkConfig, WorkerConfig } from '../config/schema.ts';
import { ConfigError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { FileSink } from './file-sink.ts';
import type { Sink } from './sink.ts';

export interface SinkContext {
  config: WorkerConfig;
  logger: Logger;
  /** Dead letters keep headers and raw bytes; outputs are written as their value. */
  deadLetters: boolean;
}

export function createSink(sink: SinkConfig, context: SinkContext): Sink | undefined {
  switch (sink.type) {
    case 'file':
      return new FileSink(sink.path, context.deadLetters);
    case 'bullmq-result':
      // The BullMQ source returns the output as the job's result; nothing else to write.
      return undefined;
    case 'kafka':
    case 'bullmq':
    case 'redis-stream':
      throw new ConfigError(`sink type '${sink.type}' is not available in this build yet`, {
        field: 'sink.type',
      });
  }
}
