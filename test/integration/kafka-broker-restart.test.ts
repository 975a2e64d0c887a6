// A Kafka broker restart is weather: with a worker process consuming under load, the broker is
// stopped for a while and started again on the same data. The worker must stay up, reconnect
// and rejoin by itself, and commit the whole input with every record in the output.
// This test runs its own broker (the shared one cannot be restarted under other tests).
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultCacheDir,
  startKafka,
  type LocalKafka,
} from '../../scripts/services/kafka-local.ts';
import { freePort } from '../../scripts/services/process-control.ts';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';

const PARTITIONS = 4;
const RECORDS = 10_000;
const OUTAGE_MS = 20_000;

let port: number;
let dataDir: string;
let broker: LocalKafka;

beforeAll(async () => {
  port = await freePort();
  dataDir = join(defaultCacheDir(), 'services', `kafka-restart-${port}`);
  broker = await startKafka({ cacheDir: defaultCacheDir(), port, dataDir });
});

afterAll(async () => {
  await broker?.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

function exitedReason(worker: WorkerProcess): () => string | undefined {
  return () =>
    worker.child.exitCode !== null || worker.child.signalCode !== null
      ? `the worker exited (${worker.child.exitCode ?? worker.child.signalCode}):\n${worker.output().slice(-4000)}`
      : undefined;
}

async function sum(offsets: Promise<Map<number, string>>): Promise<number> {
  let total = 0;
  for (const offset of (await offsets).values()) total += Math.max(0, Number(offset));
  return total;
}

describe('Kafka broker restart', () => {
  it('at-least-once: the worker survives the outage, rejoins and commits everything; nothing lost', async () => {
    const kit = new KafkaKit(broker.brokers.join(','));
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 2 },
    ]);
    const records = corpusRecords(RECORDS);
    await kit.produce(
      input,
      records.map((r, i) => ({ partition: i % PARTITIONS, key: r.id, value: JSON.stringify(r) })),
    );
    // A small in-flight bound, so that partitions pause and resume around the outage.
    const worker = startWorkerProcess(
      kafkaRouteConfig({
        brokers: kit.brokers,
        input,
        output,
        groupId,
        source: { maxInFlightPerPartition: 128 },
      }),
    );
    const died = exitedReason(worker);
    try {
      await waitForProgress(() => sum(kit.endOffsets(output)), {
        what: 'outputs before the outage',
        done: (n) => n >= 1500,
        stallMs: 60_000,
        firstProgressMs: 120_000,
        abort: died,
      });
      await broker.stop();
      // On purpose: the outage has a length, it is not a wait for something to happen.
      await sleep(OUTAGE_MS);
      expect(died(), 'the worker must outlive the outage').toBeUndefined();
      broker = await startKafka({ cacheDir: defaultCacheDir(), port, dataDir, keepData: true });

      // The rejoin waits out the old member's session; then commits must move again.
      await waitForProgress(() => sum(kit.committedOffsets(groupId, input)), {
        what: 'the worker to commit the whole input after the restart',
        done: (n) => n >= RECORDS,
        stallMs: 90_000,
        abort: died,
        context: () => worker.output().slice(-4000),
      });
      const outputs = await kit.readAll(output, {
        count: RECORDS,
        quietMs: 2000,
        stallMs: 120_000,
      });
      const ids = new Set(
        outputs.map((o) => (JSON.parse(o.value.toString('utf8')) as { id: string }).id),
      );
      process.stdout.write(
        `[kafka restart] ${ids.size} ids in ${outputs.length} outputs (${outputs.length - ids.size} duplicates)\n`,
      );
      expect(ids.size).toBe(RECORDS);
      // Re-inference after the outage is bounded: at most the records in flight, not a loop.
      expect(outputs.length).toBeLessThan(RECORDS * 2);
      worker.child.kill('SIGTERM');
      expect(await worker.exited, worker.output().slice(-4000)).toBe(0);
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        worker.child.kill('SIGKILL');
    }
  });
});
