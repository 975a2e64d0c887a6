// Start-up on real Kafka and a Redis that is not there: a worker whose topics do not exist yet
// waits (logged, once per change), starts once they are created and processes what was
// produced; a worker waiting for Redis stops at once on SIGTERM, exit 0, nothing read.
import { createServer } from 'node:net';
import { describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));

/** A TCP port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('start-up waits for what is merely absent', () => {
  it('waits for missing input and output topics, then processes what was produced', async () => {
    const input = uniqueName('late-in');
    const output = uniqueName('late-out');
    const groupId = uniqueName('late-group');
    const worker = startWorkerProcess({
      ...kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId }),
      startup: { timeoutMs: 600_000 },
    });
    // Both topics are named as missing, with the route and what it uses them for.
    await waitForProgress(
      () =>
        Number(worker.output().includes(`topic ${input} (route classify's input) does not exist`)),
      {
        what: 'the wait to be logged',
        done: (n) => n === 1,
        firstProgressMs: 120_000,
        abort: worker.gone,
      },
    );
    expect(worker.output()).toContain(`topic ${output} (route classify's output) does not exist`);
    expect(worker.output()).not.toContain('stream worker running');

    await kit.createTopics([{ topic: input, partitions: 1 }]);
    // The change is logged: now only the output topic is missing.
    await waitForProgress(
      () =>
        Number(
          worker
            .output()
            .split('\n')
            .some((l) => l.includes('start-up: waiting for') && !l.includes(`topic ${input} `)),
        ),
      { what: 'the narrower wait to be logged', done: (n) => n === 1, abort: worker.gone },
    );
    const records = corpusRecords(20);
    await kit.produce(
      input,
      records.map((r) => ({ partition: 0, key: r.id, value: JSON.stringify(r) })),
    );
    await kit.createTopics([{ topic: output, partitions: 1 }]);
    const outputs = await kit.readAll(output, { count: records.length, quietMs: 500 });
    expect(outputs.map((o) => o.key)).toEqual(records.map((r) => r.id));
    expect(worker.output()).toContain('start-up: everything needed answers');
    worker.child.kill('SIGTERM');
    expect(await worker.exited, worker.output().slice(-3000)).toBe(0);
  });

  it('a worker waiting for Redis stops on the first SIGTERM, exit 0', async () => {
    const port = await freePort();
    const worker = startWorkerProcess({
      ...kafkaRouteConfig({
        brokers: kit.brokers,
        input: 'unused',
        output: 'unused',
        groupId: 'g',
      }),
      routes: [
        {
          name: 'jobs',
          source: { type: 'bullmq', queue: uniqueName('q') },
          pipeline: 'classify',
          sink: { type: 'bullmq-result' },
        },
      ],
      connections: { redis: { url: `redis://127.0.0.1:${port}` } },
    });
    await waitForProgress(
      () => Number(worker.output().includes(`start-up: waiting for Redis at`)),
      {
        what: 'the Redis wait to be logged',
        done: (n) => n === 1,
        firstProgressMs: 120_000,
        abort: worker.gone,
      },
    );
    worker.child.kill('SIGTERM');
    expect(await worker.exited, worker.output().slice(-3000)).toBe(0);
    expect(worker.output()).toContain('stopped while start-up waited; nothing was read');
  });
});
