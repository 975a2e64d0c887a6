// SIGTERM under full load: the queues hold far more than the shutdown budget can run. The worker
// must stop taking records, give up what is still queued (unacknowledged, delivered again),
// let the batches on its threads finish (an ONNX run stopped midway aborts the process natively),
// commit what it wrote, print its summary and exit 0 within shutdown.timeoutMs.
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig } from './helpers/kafka-kit.ts';
import { startWorkerProcess } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const MINILM = join(import.meta.dirname, '..', '..', 'models', 'all-MiniLM-L6-v2-int8');
const PARTITIONS = 2;
const RECORDS = 3000;

async function sum(offsets: Promise<Map<number, string>>): Promise<number> {
  let total = 0;
  for (const offset of (await offsets).values()) total += Math.max(0, Number(offset));
  return total;
}

describe('SIGTERM, SIGHUP and a second SIGINT under load', () => {
  it.each([
    { name: 'SIGTERM', signals: ['SIGTERM'] as const },
    { name: 'SIGHUP', signals: ['SIGHUP'] as const },
    { name: 'SIGINT twice', signals: ['SIGINT', 'SIGINT'] as const },
  ])('$name: drains, exit 0, final commit, summary', async ({ signals }) => {
    const input = uniqueName('in');
    const output = uniqueName('out');
    const groupId = uniqueName('group');
    await kit.createTopics([
      { topic: input, partitions: PARTITIONS },
      { topic: output, partitions: 1 },
    ]);
    const messages = corpusRecords(RECORDS).map((r, i) => ({
      partition: i % PARTITIONS,
      key: r.id,
      value: JSON.stringify(r),
    }));
    for (let i = 0; i < messages.length; i += 200)
      await kit.produce(input, messages.slice(i, i + 200));
    const worker = startWorkerProcess({
      ...kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId }),
      models: { cls: { path: MINILM } },
      pipelines: { classify: { task: 'featureExtraction', model: 'cls' } },
      // Queued records are given up at half the budget; the other half must cover the batches
      // already on the threads, each int8 batch run row by row (10 s was too little on a slow
      // AVX2 machine, 2026-12-04). The drain ends when they do, so a larger budget costs a fast
      // machine only the first half.
      shutdown: { timeoutMs: 30_000 },
    });
    try {
      const before = await waitForProgress(() => sum(kit.endOffsets(output)), {
        what: 'outputs before SIGTERM',
        done: (n) => n >= 50,
        stallMs: 60_000,
        firstProgressMs: 120_000,
        abort: worker.gone,
        context: () => worker.output().slice(-3000),
      });
      const [first, second] = signals;
      worker.child.kill(first);
      if (second !== undefined) {
        // The second one comes during the drain, as an impatient operator's Ctrl-C would.
        await waitForProgress(() => Number(worker.output().includes('"msg":"stopping"')), {
          what: 'the drain to begin',
          done: (n) => n === 1,
          stallMs: 60_000,
          abort: worker.gone,
        });
        worker.child.kill(second);
      }
      const code = await worker.exited;
      const log = worker.output();
      expect(code, log.slice(-4000)).toBe(0);
      expect(log).toContain(`"reason":"${first}"`);
      if (second !== undefined) expect(log).toContain('stop signal during the drain');
      expect(log).toMatch(/classify: \d+ records, \d+ written/);
      // The final commit covers at least what was written before the signal, and never more
      // than was written.
      const committed = await sum(kit.committedOffsets(groupId, input));
      const written = await sum(kit.endOffsets(output));
      expect(committed).toBeGreaterThanOrEqual(before);
      expect(committed).toBeLessThanOrEqual(written);
      // Under this load most of the input was still queued: it was given up, not run.
      expect(committed).toBeLessThan(RECORDS);
    } finally {
      if (worker.child.exitCode === null && worker.child.signalCode === null)
        worker.child.kill('SIGKILL');
    }
  });
});
