// What every chaos scenario gets (the services, Kafka from outside, the worker processes) and what
// it gives back: records in, lost, duplicates and the checks that failed, in words.
import { randomBytes } from 'node:crypto';
import { waitForProgress } from '../helpers/progress.ts';
import type { Consumed, KafkaTools } from './kafka-tools.ts';
import { idOf, recordValue } from './routes.ts';
import type { ChaosServices } from './services.ts';
import type { ChaosWorker, WorkerPool } from './worker.ts';

export interface ChaosContext {
  services: ChaosServices;
  kafka: KafkaTools;
  workers: WorkerPool;
  /** How long a measure may stand still before a wait fails. */
  stallMs: number;
  /** How long a worker may take to show its first progress (start-up, group join). */
  startMs: number;
  log: (message: string) => void;
}

export interface ScenarioResult {
  name: string;
  records: number;
  lost: number;
  duplicates: number;
  mode: 'at-least-once' | 'exactly-once';
  failures: string[];
  details: Record<string, unknown>;
}

export type Scenario = (ctx: ChaosContext, records: number) => Promise<ScenarioResult>;

export function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** Records spread over `partitions` in order: record i goes to partition i % partitions. */
export function scenarioRecords(
  scenario: string,
  count: number,
  partitions: number,
): { partition: number; key: string; value: string }[] {
  return Array.from({ length: count }, (_, i) => ({
    partition: i % partitions,
    key: `${scenario}-${i}`,
    value: recordValue(scenario, i),
  }));
}

/** Lost and duplicated ids among outputs, against ids `<scenario>-0 .. count-1`. */
export function countOutputs(
  scenario: string,
  count: number,
  values: readonly (Buffer | string | null)[],
): { lost: number; duplicates: number; strangers: number } {
  const seen = new Map<string, number>();
  let strangers = 0;
  for (const value of values) {
    const id = idOf(value);
    if (id === undefined || !id.startsWith(`${scenario}-`)) strangers += 1;
    else seen.set(id, (seen.get(id) ?? 0) + 1);
  }
  let lost = 0;
  let duplicates = 0;
  for (let i = 0; i < count; i += 1) {
    const n = seen.get(`${scenario}-${i}`) ?? 0;
    if (n === 0) lost += 1;
    else duplicates += n - 1;
  }
  return { lost, duplicates, strangers };
}

/** Waits until the group has committed `total` records of `topic`, failing when commits stall. */
export async function waitCommitted(
  ctx: ChaosContext,
  groupId: string,
  topic: string,
  total: number,
  workers: readonly ChaosWorker[],
  what: string,
  stallMs = ctx.stallMs,
): Promise<void> {
  await waitForProgress(() => ctx.kafka.committedTotal(groupId, topic), {
    what,
    done: (n) => n >= total,
    stallMs,
    firstProgressMs: Math.max(stallMs, ctx.startMs),
    intervalMs: 500,
    abort: () =>
      workers.every((w) => !w.alive()) ? workers.map((w) => w.gone()).join('; ') : undefined,
    context: () => workers.map((w) => `${w.name}: ${w.output()}`).join('\n'),
  });
}

/** Waits until the topic's end offsets reach `target` (outputs written, committed or not). */
export async function waitOutputs(
  ctx: ChaosContext,
  topic: string,
  target: number,
  worker: ChaosWorker,
  what: string,
): Promise<void> {
  await waitForProgress(() => ctx.kafka.endTotal(topic), {
    what,
    done: (n) => n >= target,
    stallMs: ctx.stallMs,
    firstProgressMs: Math.max(ctx.stallMs, ctx.startMs),
    intervalMs: 250,
    abort: worker.gone,
  });
}

/** SIGTERM, then the exit code; a worker that outlives `graceMs` is killed and reported. */
export async function terminate(
  worker: ChaosWorker,
  graceMs: number,
  startMs = 180_000,
): Promise<number | string> {
  if (!worker.alive()) return worker.exited;
  // A signal before start-up finished tests start-up, not draining: wait until it runs.
  await waitForProgress(() => worker.isRunning(), {
    what: `${worker.name} to start`,
    done: (running) => running,
    stallMs: startMs,
    abort: worker.gone,
  }).catch(() => undefined);
  worker.child.kill('SIGTERM');
  const timer = setTimeout(() => worker.child.kill('SIGKILL'), graceMs);
  try {
    return await worker.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** A fault that lands after the input was done tests nothing: that is a failure of the run. */
export function midRun(done: number, count: number, fault: string): string | undefined {
  return done >= count
    ? `the ${fault} came after all ${count} records were written (too few records for this machine)`
    : undefined;
}

export function failureText(error: unknown): string {
  return error instanceof Error ? error.message.slice(0, 1500) : String(error);
}

/** The names of a Kafka-sourced scenario's topics and group, all under one fresh tag. */
export interface KafkaScenario {
  tag: string;
  input: string;
  output: string;
  groupId: string;
}

/**
 * A fresh input topic filled with `count` scenario records; the output topic (two partitions) too,
 * unless the scenario writes elsewhere.
 */
export async function kafkaScenario(
  ctx: ChaosContext,
  prefix: string,
  count: number,
  partitions: number,
  options: { outputTopic?: boolean } = {},
): Promise<KafkaScenario> {
  const tag = unique(prefix);
  const names = { tag, input: `${tag}-in`, output: `${tag}-out`, groupId: `${tag}-group` };
  await ctx.kafka.createTopic(names.input, partitions);
  if (options.outputTopic ?? true) await ctx.kafka.createTopic(names.output, 2);
  await ctx.kafka.produce(names.input, scenarioRecords(tag, count, partitions));
  return names;
}

/** Every output record's value on a Kafka topic, committed or not, once `count` are there. */
export async function kafkaOutputValues(
  ctx: ChaosContext,
  topic: string,
  count: number,
): Promise<(Buffer | null)[]> {
  const outputs = await ctx.kafka.read(topic, {
    readCommitted: false,
    enough: (got) => got.length >= count,
  });
  return outputs.map((r) => r.value);
}

/**
 * Reads a scenario's outputs (read_committed under exactly-once) until none is lost or reading
 * stalls, and adds to `failures` what the delivery mode forbids: a lost record, a duplicate
 * under exactly-once, an output without a known id.
 */
export async function readAndCount(
  ctx: ChaosContext,
  scenario: { tag: string; count: number; output: string; eos: boolean },
  failures: string[],
): Promise<{ outputs: Consumed[]; lost: number; duplicates: number }> {
  const { tag, count, output, eos } = scenario;
  const values = (records: readonly Consumed[]) => records.map((r) => r.value);
  const outputs = await ctx.kafka.read(output, {
    readCommitted: eos,
    enough: (got) => countOutputs(tag, count, values(got)).lost === 0,
  });
  const counted = countOutputs(tag, count, values(outputs));
  if (counted.lost > 0) failures.push(`${counted.lost} records lost`);
  if (eos && counted.duplicates > 0)
    failures.push(`${counted.duplicates} duplicates under exactly-once (read_committed)`);
  if (counted.strangers > 0) failures.push(`${counted.strangers} outputs without a known id`);
  return { outputs, lost: counted.lost, duplicates: counted.duplicates };
}

/** The result of an at-least-once scenario: duplicates are allowed, a lost record fails it. */
export function atLeastOnceResult(
  name: string,
  tag: string,
  count: number,
  values: readonly (Buffer | string | null)[],
  failures: string[],
  details: Record<string, unknown>,
): ScenarioResult {
  const counted = countOutputs(tag, count, values);
  if (counted.lost > 0) failures.push(`${counted.lost} records lost`);
  return {
    name,
    records: count,
    lost: counted.lost,
    duplicates: counted.duplicates,
    mode: 'at-least-once',
    failures,
    details,
  };
}
