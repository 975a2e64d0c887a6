// Delivery guarantees with real worker processes on a real broker: kill -9 mid-stream and a
// restart lose nothing (at-least-once may duplicate; exactly-once may not, read_committed), two
// workers in one group share the partitions and one leaving by SIGTERM loses nothing, and
// SIGTERM drains, commits and exits 0.
import { describe, expect, inject, it } from 'vitest';
import { waitForProgress } from '../helpers/progress.ts';
import { corpusRecords } from '../helpers/redis-routes.ts';
import { uniqueName } from '../helpers/unique-name.ts';
import { KafkaKit, kafkaRouteConfig, type ReadRecord } from './helpers/kafka-kit.ts';
import { startWorkerProcess, type WorkerProcess } from './helpers/worker-process.ts';

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

/** Committed offset per partition, in partition order ('-1' where none yet). */
async function committedList(groupId: string, input: string): Promise<string[]> {
  const committed = await kit.committedOffsets(groupId, input);
  return [...Array(PARTITIONS).keys()].map((p) => committed.get(p) ?? '-1');
}

async function expectCommittedAtEnd(groupId: string, input: string): Promise<void> {
  const committed = await kit.committedOffsets(groupId, input);
  const ends = await kit.endOffsets(input);
  for (const [p, end] of ends) expect(committed.get(p), `partition ${p}`).toBe(end);
}

/** Waits while the workers write outputs, until `atLeast` are in the topic. */
function outputsFrom(
  workers: WorkerProcess[],
  what: string,
  topic: string,
  atLeast: number,
): Promise<number> {
  return waitForProgress(() => outputCount(topic), {
    what,
    done: (n) => n >= atLeast,
    // A fresh process loads the model and joins the group before its first output.
    firstProgressMs: 120_000,
    abort: () => workers.map((w) => w.gone()).find((reason) => reason !== undefined),
    context: () => workers.map((w) => `worker log tail:\n${w.output().slice(-3000)}`).join('\n'),
  });
}

/**
 * The end of every delivery scenario: the survivor commits the whole input, every input id is in
 * the output (once, in exactly-once mode), and the survivor exits 0 on SIGTERM.
 */
async function finishAndCheck(
  scenario: string,
  mode: 'at-least-once' | 'exactly-once',
  survivor: WorkerProcess,
  run: { input: string; output: string; groupId: string; records: readonly unknown[] },
): Promise<void> {
  const ends = await kit.endOffsets(run.input);
  const end = [...Array(PARTITIONS).keys()].map((p) => ends.get(p));
  await waitForProgress(() => committedList(run.groupId, run.input), {
    what: 'the group to commit the whole input',
    done: (committed) => committed.every((offset, p) => offset === end[p]),
    // Before its first commit the survivor may wait out the dead member's 10 s session, and in
    // exactly-once mode the fenced transaction's timeout, after loading its model.
    firstProgressMs: 120_000,
    abort: survivor.gone,
    context: () =>
      `ends ${JSON.stringify(end)}; survivor log tail:\n${survivor.output().slice(-3000)}`,
  });
  const outputs = await kit.readAll(run.output, {
    count: run.records.length,
    readCommitted: mode === 'exactly-once',
    quietMs: 3000,
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
  it('kill -9 mid-stream, then a restart: nothing is lost', async () => {
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
    await outputsFrom([first], 'outputs before the kill', output, 800);
    first.child.kill('SIGKILL');
    expect(await first.exited).toBe('SIGKILL');

    const second = startWorkerProcess(config);
    await finishAndCheck('kill -9', mode, second, { input, output, groupId, records });
  });

  it('two workers share the group; one leaves by SIGTERM and the other takes over', async () => {
    const { input, output, groupId, records } = await setUp(4000);
    const config = kafkaRouteConfig({ brokers: kit.brokers, input, output, groupId, mode });
    const a = startWorkerProcess(config);
    const b = startWorkerProcess(config);
    await outputsFrom([a, b], 'outputs from both workers', output, 800);
    a.child.kill('SIGTERM');
    expect(await a.exited, a.output()).toBe(0);
    // They shared: A held some but not all of the partitions at some point.
    const sizes = assignments(a.output());
    expect(
      sizes.some((n) => n > 0 && n < PARTITIONS),
      `A's assignments: ${sizes.join(',')}`,
    ).toBe(true);

    await finishAndCheck('two workers', mode, b, { input, output, groupId, records });
  });
});
