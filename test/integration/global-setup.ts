import type { TestProject } from 'vitest/node';
import { resolveKafka, resolveRedis } from './services.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const [kafka, redis] = await Promise.all([resolveKafka(), resolveRedis()]);
  process.stdout.write(
    `[services] Kafka ${kafka.address} (${kafka.origin}, ${kafka.startupMs} ms); ` +
      `Redis ${redis.address} (${redis.origin}, ${redis.startupMs} ms)\n`,
  );
  project.provide('kafkaBrokers', kafka.address);
  project.provide('redisUrl', redis.address);
  return async () => {
    await Promise.all([kafka.stop(), redis.stop()]);
  };
}
