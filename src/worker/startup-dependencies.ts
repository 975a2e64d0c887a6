// What a config's routes need from outside before the worker starts: the Kafka cluster with every
// topic a route reads or writes, Redis, and the Schema Registry. Each is a start-up Dependency (startup-wait.ts).
import { Redis } from 'ioredis';
import type { SinkConfig, SourceConfig } from '../config/schema.ts';
import type { Connections } from '../connectors/connections.ts';
import { redactText } from '../redaction.ts';
import {
  connectionErrorOf,
  isFatalRedisError,
  type RedisTarget,
} from '../connectors/redis/redis-connection.ts';
import { RouteSchemas } from '../schema/route-schemas.ts';
import type { Dependency } from './startup-wait.ts';
import type { WorkerPlan } from './worker-plan.ts';

/** Where a route uses a topic: what the log says is missing. */
interface TopicUse {
  topic: string;
  uses: string[];
}

export function startupDependencies(plan: WorkerPlan): Dependency[] {
  const topics = new Map<string, TopicUse>();
  let redis = false;
  const note = (end: SourceConfig | SinkConfig | undefined, route: string, role: string): void => {
    if (end === undefined) return;
    if (end.type === 'kafka') {
      const use = topics.get(end.topic) ?? { topic: end.topic, uses: [] };
      use.uses.push(`route ${route}'s ${role}`);
      topics.set(end.topic, use);
    } else if (end.type === 'bullmq' || end.type === 'redis-stream') redis = true;
  };
  for (const { name, route } of plan.routes) {
    note(route.source, name, 'input');
    note(route.sink, name, 'output');
    note(route.dlq, name, 'dead-letter topic');
  }
  const dependencies: Dependency[] = [];
  const { connections } = plan;
  const brokers = connections.kafkaBrokers;
  if (topics.size > 0 && brokers !== undefined) {
    const driver = connections.kafka('routes');
    dependencies.push({
      name: `Kafka at ${brokers.join(',')}`,
      async missing() {
        const found = await driver.topicPartitions([...topics.keys()]);
        return [...topics.values()]
          .filter((t) => !found.has(t.topic))
          .map((t) => `topic ${t.topic} (${t.uses.join(', ')}) does not exist`);
      },
    });
  }
  if (redis) dependencies.push(redisDependency(connections));
  if (plan.routes.some(({ route }) => RouteSchemas.needed(route))) {
    const { registry } = connections.schemaRegistry('routes');
    dependencies.push({
      name: registry.name,
      async missing() {
        // An outage rejects (the wait retries it); refused credentials end the wait (exit 2).
        await registry.ping();
        return [];
      },
    });
  }
  return dependencies;
}

function redisDependency(connections: Connections): Dependency {
  const target: RedisTarget = connections.redis('routes');
  return {
    name: `Redis at ${redactText(target.url)}`,
    async missing() {
      // One attempt, no reconnect loop: the wait's own backoff decides when to ask again.
      const client = new Redis(target.url, {
        ...target.options,
        lazyConnect: true,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        retryStrategy: () => null,
        connectTimeout: 5_000,
      });
      // A refused AUTH arrives as an 'error' event; connect() then only says the connection closed.
      let emitted: unknown;
      client.on('error', (err: unknown) => (emitted ??= err));
      try {
        await client.connect();
        await client.ping();
        return [];
      } catch (err) {
        for (const cause of [emitted, err])
          if (isFatalRedisError(cause)) throw connectionErrorOf(cause, target.url);
        throw err;
      } finally {
        client.disconnect();
      }
    },
  };
}
