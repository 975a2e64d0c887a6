// The Kafka a benchmark talks to: KAFKA_BROKERS when set, else a local broker of its own on a free
// port (scripts/services/kafka-local.ts), stopped by `stop`.
import { join } from 'node:path';
import { defaultCacheDir, startKafka } from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';

export interface BenchKafka {
  brokers: string;
  stop: () => Promise<void>;
}

export async function benchKafka(
  log: (line: string) => void = () => undefined,
): Promise<BenchKafka> {
  const given = process.env['KAFKA_BROKERS'];
  if (given !== undefined && given !== '') return { brokers: given, stop: () => Promise.resolve() };
  const port = await freePort();
  const kafka = await startKafka({
    cacheDir: defaultCacheDir(),
    port,
    dataDir: join(defaultCacheDir(), 'services', `kafka-bench-${port}`),
  });
  const brokers = kafka.brokers.join(',');
  log(`started Kafka at ${brokers}`);
  return { brokers, stop: kafka.stop };
}
