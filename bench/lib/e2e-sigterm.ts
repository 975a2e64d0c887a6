// bench:e2e --clients, the delivery half: two worker processes share one consumer group under load,
// one leaves by SIGTERM once a share of the outputs is written, and the other finishes the input.
// What comes back is what an operator sees after a scale-down: the input ids missing from the output
// (lost) and the ids written more than once (duplicates), read_committed in exactly-once mode.
// The same shape as the two-worker test in test/integration/kafka-delivery.test.ts, on the
// benchmark's model and records; the processes are the chaos suite's (test/chaos/worker.ts).
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { terminate } from '../../test/chaos/scenario.ts';
import { WorkerPool } from '../../test/chaos/worker.ts';
import { waitForProgress } from '../../test/helpers/progress.ts';
import type { KafkaKit } from '../../test/integration/helpers/kafka-kit.ts';
import type { KafkaClientName } from './e2e-args.ts';

export type DeliveryMode = 'at-least-once' | 'exactly-once';

export interface SigtermOutcome {
  lost: number;
  duplicates: number;
  /** The leaver held some but not all partitions at some point: the two really shared. */
  shared: boolean;
  /** Exit codes of the leaver and the survivor (0 after a clean drain). */
  exits: [number | string, number | string];
  seconds: number;
}

export interface SigtermPassOptions {
  kit: KafkaKit;
  client: KafkaClientName;
  mode: DeliveryMode;
  records: readonly { id: string; text: string }[];
  partitions: number;
  /** A raw worker config (as its YAML file holds it) for one route from input to output. */
  workerConfig: (route: {
    input: string;
    output: string;
    groupId: string;
    client: KafkaClientName;
    mode: DeliveryMode;
  }) => Record<string, unknown>;
  log: (line: string) => void;
}

/** The share of outputs written before the first worker is sent SIGTERM. */
const LEAVE_AT = 0.3;
/** A worker's SIGTERM budget (shutdown.timeoutMs) plus a margin for a loaded machine. */
const EXIT_GRACE_MS = 90_000;
/** Loading the model and joining the group show no progress on any measure. */
const START_MS = 240_000;

export async function sigtermPass(options: SigtermPassOptions): Promise<SigtermOutcome> {
  const { kit, client, mode, records, partitions } = options;
  const suffix = Math.random().toString(36).slice(2, 8);
  const input = `bench-term-in-${suffix}`;
  const output = `bench-term-out-${suffix}`;
  const groupId = `bench-term-${suffix}`;
  await kit.createTopics([
    { topic: input, partitions },
    { topic: output, partitions },
  ]);
  await kit.produce(
    input,
    records.map((r, i) => ({ partition: i % partitions, key: r.id, value: JSON.stringify(r) })),
  );
  const config = options.workerConfig({ input, output, groupId, client, mode });
  const pool = new WorkerPool(mkdtempSync(join(tmpdir(), 'hugot-bench-sigterm-')));
  const started = performance.now();
  const leaver = pool.start(`${client}-${mode}-leaver`, config);
  const survivor = pool.start(`${client}-${mode}-survivor`, config);
  try {
    const outputCount = async (): Promise<number> => {
      let total = 0;
      for (const high of (await kit.endOffsets(output)).values()) total += Number(high);
      return total;
    };
    await waitForProgress(outputCount, {
      what: `${client} ${mode}: outputs before the SIGTERM`,
      done: (n) => n >= Math.ceil(records.length * LEAVE_AT),
      firstProgressMs: START_MS,
      abort: () => leaver.gone() ?? survivor.gone(),
    });
    const leaverExit = await terminate(leaver, EXIT_GRACE_MS, START_MS);
    const ends = await kit.endOffsets(input);
    await waitForProgress(() => kit.committedOffsets(groupId, input), {
      what: `${client} ${mode}: the survivor commits the whole input`,
      done: (committed) => [...ends].every(([p, end]) => committed.get(p) === end),
      // It may wait out a transaction timeout (exactly-once) before its first commit.
      firstProgressMs: START_MS,
      abort: survivor.gone,
      context: () => `survivor log tail:\n${survivor.output()}`,
    });
    const seconds = (performance.now() - started) / 1000;
    const survivorExit = await terminate(survivor, EXIT_GRACE_MS, START_MS);
    // Read until the topic is quiet, not until a count: a lost record must show as lost, not as
    // a reader that never finishes.
    const outputs = await kit.readAll(output, {
      readCommitted: mode === 'exactly-once',
      quietMs: 5000,
    });
    const seen = new Map<string, number>();
    for (const o of outputs) {
      const id = (JSON.parse(o.value.toString('utf8')) as { id: string }).id;
      seen.set(id, (seen.get(id) ?? 0) + 1);
    }
    let duplicates = 0;
    for (const n of seen.values()) duplicates += n - 1;
    const outcome: SigtermOutcome = {
      lost: records.filter((r) => !seen.has(r.id)).length,
      duplicates,
      shared: assignmentSizes(join(pool.dir, `${leaver.name}.log`)).some(
        (n) => n > 0 && n < partitions,
      ),
      exits: [leaverExit, survivorExit],
      seconds,
    };
    options.log(
      `SIGTERM of one of two workers, ${client} ${mode}: ${outcome.lost} lost, ` +
        `${outcome.duplicates} duplicates, exits ${outcome.exits.join('/')}, shared ${outcome.shared}`,
    );
    return outcome;
  } finally {
    await pool.killAll();
  }
}

/** The sizes of the assignments a worker logged, in order (its log file, one JSON line each). */
function assignmentSizes(logFile: string): number[] {
  return readFileSync(logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('Kafka partitions assigned'))
    .map((line) => (JSON.parse(line) as { partitions: number[] }).partitions.length);
}
