// Delivery guarantees with real worker processes on a real broker: kill -9 mid-stream and a
// restart lose nothing (at-least-once may duplicate; exactly-once may not, read_committed), two
// workers in one group share the partitions and one leaving by SIGTERM loses nothing, and
// SIGTERM drains, commits and exits 0.
import { describe, expect, inject, it } from 'vitest';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig, type ReadRecord } from './helpers/kafka-kit.ts';
import { startWorkerProcess, waitFor } from './helpers/worker-process.ts';

const kit = new KafkaKit(inject('kafkaBrokers'));
const PARTITIONS = 4;

async function setUp(count: number) {
  const input = uniqueName('in');
  const output = uniqueName('out');
  const groupId = uniqueName('group');
  await kit.createTopics([
    { topic: input, partitions: PARTITIONS },
    { topic: output, partitions: 2 },
  ]);
  const records = corpusRecords(count);
  await kit.produce(
    input,
    records.map((r, i) => ({ partition: i % PARTITIONS, key: r.id, value: JSON.stringify(r) })),
  );
  return { input, output, groupId, records };
}

async function outputCount(topic: string): Promise<number> {
  let total = 0;
  for (const high of (await kit.endOffsets(topic)).values()) total += Number(high);
  return total;
}

function idsOf(outputs: ReadRecord[]): { unique: Set<string>; duplicates: number } {
  const unique = new Set<string>();
  let duplicates = 0;
  for (const o of outputs) {
    const id = (JSON.parse(o.value.toString('utf8')) as { id: string }).id;
    if (unique.has(id)) duplicates += 1;
    unique.add(id);
  }
  return { unique, duplicates };
}

/** The sizes of the assignments a worker logged, in order. */
function assignments(log: string): number[] {
  return log
    .split('\n')
    .filter((line) => line.includes('Kafka partitions assigned'))
    .map((line) => (JSON.parse(line) as { partitions: number[] }).partitions.length);
}

async function committedAtEnd(groupId: string, input: string): Promise<boolean> {
  const committed = await kit.committedOffsets(groupId, input);
  for (const [p, end] of await kit.endOffsets(input)) if (committed.get(p) !== end) return false;
  return true;
}

async function expectCommittedAtEnd(groupId: string, input: string): Promise<void> {
  const committed = await kit.committedOffsets(groupId, input);
  const ends = await kit.endOffsets(input);
  for (const [p, end] of ends) expect(committed.get(p), `partition ${p}`).toBe(end);
}

/**
 * The end of every delivery scenario: the survivor commits the whole input, every input id is in
 * the output (once, in exactly-once mode), and the survivor exits 0 on SIGTERM.
 */
async function finishAndCheck(
  scenario: string,
  mode: 'at-least-once' | 'exactly-once',
  survivor: ReturnType<typeof startWorkerProcess>,
  run: { input: string; output: string; groupId: string; records: readonly unknown[] },
): Promise<void> {
  await waitFor(
    'the group to commit the whole input',
    () => committedAtEnd(run.groupId, run.input),
    100_000,
  );
  const outputs = await kit.readAll(run.output, {
    count: run.records.length,
    readCommitted: mode === 'exactly-once',
    quietMs: 3000,
    timeoutMs: 100_000,
  });
  survivor.child.kill('SIGTERM');
  expect(await survivor.exited, survivor.output()).toBe(0);
  const { unique, duplicates } = idsOf(outputs);
  process.stdout.write(
    `[kafka ${mode}] ${scenario}: ${unique.size} ids, ${duplicates} duplicates\n`,
  );
  expect(unique.size).toBe(run.records.length);
  if (mode === 'exactly-once') expect(duplicates).toBe(0);
  await expectCommittedAtEnd(run.groupId, run.input);
}

describe.each(['at-least-once', 'exactly-once'] as const)('Kafka delivery, %s', (mode) => {
  it('kill -9 mid-stream, then a restart: nothing is lost', { timeout: 150_000 }, async () => {
    const { input, output, groupId, records } = await setUp(4000);
    const config = kafkaRouteConfig({
      brokers: kit.brokers,
      input,
      output,
      groupId,
      mode,
      source: { transactionTimeoutMs: 10_000, transactionMaxRecords: 200 },
    });
    const first = startWorkerProcess(config);
    await waitFor(
      'outputs before the kill',
      async () => (await outputCount(output)) >= 800,
      90_000,
    );
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = startWorkerProcess(config);
    await finishAndCheck('kill -9', mode, second, { input, output, groupId, records });
  });

  it(
    'two workers share the group; one leaves by SIGTERM and the other takes over',
    { timeout: 150_000 },
    async () => {
      const { input, output, groupId, records } = await setUp(4000);
      const config = kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId, mode });
      const a = startWorkerProcess(config);
      const b = startWorkerProcess(config);
      await waitFor(
        'outputs from both workers',
        async () => (await outputCount(output)) >= 800,
        90_000,
      );
      a.child.kill('SIGTERM');
      expect(await a.exited, a.output()).toBe(0);
      // They shared: A held some but not all of the partitions at some point.
      const sizes = assignments(a.output());
      expect(
        sizes.some((n) => n > 0 && n < PARTITIONS),
        `A's assignments: ${sizes.join(',')}`,
      ).toBe(true);

      await finishAndCheck('two workers', mode, b, { input, output, groupId, records });
    },
  );
});
