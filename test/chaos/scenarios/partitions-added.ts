// Partitions added to the input topic while a worker reads it (2 → 4), and the rest of the input
// produced only to the new partitions: without partition discovery nothing would ever read them.
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  atLeastOnceResult,
  failureText,
  kafkaOutputValues,
  scenarioRecords,
  terminate,
  unique,
  waitCommitted,
  waitOutputs,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

export async function partitionsAdded(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const tag = unique('grow');
  const [input, output, groupId] = [`${tag}-in`, `${tag}-out`, `${tag}-group`];
  await ctx.kafka.createTopic(input, 2);
  await ctx.kafka.createTopic(output, 2);
  const records = scenarioRecords(tag, count, 2);
  const half = Math.floor(count / 2);
  // Small sends: two partitions' batches of the default chunk outgrow the broker's request limit.
  await ctx.kafka.produce(input, records.slice(0, half), 500);
  const failures: string[] = [];
  const worker = ctx.workers.start(
    'partitions-added',
    workerConfig({
      brokers: ctx.services.brokers,
      source: kafkaSource(input, groupId, { partitionDiscoveryMs: 2_000 }),
      sink: { type: 'kafka', topic: output },
    }),
  );
  try {
    await waitOutputs(ctx, output, Math.ceil(half / 2), worker, 'partitions-added: first outputs');
    const grew = worker.watch(`topic ${input} grew from 2 to 4 partitions`);
    await ctx.kafka.addPartitions(input, 4);
    await ctx.kafka.produce(
      input,
      records.slice(half).map((r, i) => ({ ...r, partition: 2 + (i % 2) })),
      500,
    );
    await waitCommitted(ctx, groupId, input, count, [worker], 'partitions-added: all committed');
    if (!grew()) failures.push('the growth was not logged');
    const code = await terminate(worker, 90_000);
    if (code !== 0) failures.push(`SIGTERM exit ${code}, not 0`);
  } catch (error) {
    failures.push(failureText(error));
  } finally {
    await worker.kill9();
  }
  const outputs = await kafkaOutputValues(ctx, output, count);
  return atLeastOnceResult('partitions-added', tag, count, outputs, failures, {
    outputs: outputs.length,
  });
}
