// Three workers in one consumer group; one is killed -9 mid-run. The group rebalances its
// partitions to the other two, which finish the input: nothing lost.
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  countOutputs,
  failureText,
  midRun,
  scenarioRecords,
  terminate,
  unique,
  waitCommitted,
  waitOutputs,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

const PARTITIONS = 6;

export async function groupKill(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const tag = unique('grp');
  const input = `${tag}-in`;
  const output = `${tag}-out`;
  const groupId = `${tag}-group`;
  const failures: string[] = [];
  await ctx.kafka.createTopic(input, PARTITIONS);
  await ctx.kafka.createTopic(output, 2);
  await ctx.kafka.produce(input, scenarioRecords(tag, count, PARTITIONS));
  const config = workerConfig({
    brokers: ctx.services.brokers,
    source: kafkaSource(input, groupId, { maxInFlightPerPartition: 256 }),
    sink: { type: 'kafka', topic: output },
  });
  const workers = [0, 1, 2].map((i) => ctx.workers.start(`group-w${i}`, config));
  const [victim, ...survivors] = workers;
  try {
    if (victim === undefined) throw new Error('no workers');
    await waitOutputs(
      ctx,
      output,
      Math.ceil(count * 0.3),
      victim,
      'group: outputs before the kill',
    );
    const early = midRun(await ctx.kafka.endTotal(output), count, 'kill');
    if (early !== undefined) failures.push(early);
    await victim.kill9();
    await waitCommitted(
      ctx,
      groupId,
      input,
      count,
      survivors,
      'group: the two survivors commit everything',
    );
    for (const w of survivors) {
      if (!w.alive()) failures.push(`${w.name} died: ${w.gone() ?? ''}`);
      const code = await terminate(w, 90_000);
      if (code !== 0) failures.push(`${w.name}: SIGTERM exit ${code}, not 0`);
    }
  } catch (error) {
    failures.push(failureText(error));
  } finally {
    for (const w of workers) await w.kill9();
  }
  const outputs = await ctx.kafka.read(output, {
    readCommitted: false,
    enough: (got) => got.length >= count,
  });
  const counted = countOutputs(
    tag,
    count,
    outputs.map((r) => r.value),
  );
  if (counted.lost > 0) failures.push(`${counted.lost} records lost`);
  return {
    name: 'three-workers-one-killed',
    records: count,
    lost: counted.lost,
    duplicates: counted.duplicates,
    mode: 'at-least-once',
    failures,
    details: { outputs: outputs.length },
  };
}
