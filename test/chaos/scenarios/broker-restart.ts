// The Kafka broker stops under load and comes back on the same data after an outage. The worker
// must outlive it and recover by itself (the harness never restarts it): everything committed,
// nothing lost.
import { setTimeout as sleep } from 'node:timers/promises';
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

const PARTITIONS = 4;
const OUTAGE_MS = 20_000;

export async function brokerRestart(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const { tag, input, output, groupId } = await kafkaScenario(ctx, 'brk', count, PARTITIONS);
  const failures: string[] = [];
  const worker = ctx.workers.start(
    'broker-restart',
    workerConfig({
      brokers: ctx.services.brokers,
      source: kafkaSource(input, groupId, { maxInFlightPerPartition: 256 }),
      sink: { type: 'kafka', topic: output },
    }),
  );
  let restarted = false;
  try {
    await waitOutputs(
      ctx,
      output,
      Math.ceil(count * 0.2),
      worker,
      'broker-restart: outputs before the outage',
    );
    const early = midRun(await ctx.kafka.endTotal(output), count, 'broker stop');
    if (early !== undefined) failures.push(early);
    await ctx.services.stopKafka();
    await sleep(OUTAGE_MS);
    if (!worker.alive()) failures.push(`the worker died during the outage: ${worker.gone() ?? ''}`);
    await ctx.services.startKafka(true);
    restarted = true;
    await waitCommitted(
      ctx,
      groupId,
      input,
      count,
      [worker],
      'broker-restart: the worker commits everything after the restart',
      Math.max(ctx.stallMs, 120_000),
    );
    const code = await terminate(worker, 90_000);
    if (code !== 0) failures.push(`SIGTERM exit ${code}, not 0`);
  } catch (error) {
    failures.push(failureText(error));
  } finally {
    if (!restarted) await ctx.services.startKafka(true);
    await worker.kill9();
  }
  const outputs = await kafkaOutputValues(ctx, output, count);
  return atLeastOnceResult('kafka-broker-restart', tag, count, outputs, failures, {
    outageMs: OUTAGE_MS,
    outputs: outputs.length,
  });
}
