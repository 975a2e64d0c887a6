// Three workers in one consumer group; one is killed -9 mid-run. The group rebalances its
// partitions to the other two, which finish the input: nothing lost.
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  atLeastOnceResult,
  failureText,
  kafkaOutputValues,
  kafkaScenario,
  midRun,
  terminate,
  waitCommitted,
  waitOutputs,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

const PARTITIONS = 6;

export async function groupKill(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const { tag, input, output, groupId } = await kafkaScenario(ctx, 'grp', count, PARTITIONS);
  const failures: string[] = [];
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
  const outputs = await kafkaOutputValues(ctx, output, count);
  return atLeastOnceResult('three-workers-one-killed', tag, count, outputs, failures, {
    outputs: outputs.length,
  });
}
