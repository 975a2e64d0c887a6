// The sink is unavailable for 60 s (a Kafka -> Redis stream route whose Redis is down). The worker
// must hold still: sources paused at their in-flight bound, memory bounded, no re-inference loop
// (its CPU time during the outage stays low), and when the sink returns everything is written.
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForProgress } from '../../helpers/progress.ts';
import { redisClient, StreamReader } from '../redis-tools.ts';
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  atLeastOnceResult,
  failureText,
  kafkaScenario,
  midRun,
  terminate,
  waitCommitted,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

const PARTITIONS = 4;
const OUTAGE_MS = 60_000;
/** Growth of resident memory allowed during the outage. */
const MAX_RSS_GROWTH_MIB = 256;
/** Mean CPU (cores) allowed while the sink is down: heartbeats and reconnects, not inference. */
const MAX_OUTAGE_CORES = 0.35;

export async function sinkOutage(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const { tag, input, output, groupId } = await kafkaScenario(ctx, 'sink', count, PARTITIONS, {
    outputTopic: false,
  });
  const failures: string[] = [];
  const details: Record<string, unknown> = {};
  const redis = redisClient(ctx.services.redisUrl);
  const reader = new StreamReader(output);
  let restarted = false;
  const worker = ctx.workers.start(
    'sink-outage',
    workerConfig({
      brokers: ctx.services.brokers,
      redisUrl: ctx.services.redisUrl,
      source: kafkaSource(input, groupId, { maxInFlightPerPartition: 512 }),
      sink: { type: 'redis-stream', stream: output },
    }),
  );
  try {
    await waitForProgress(() => reader.poll(redis), {
      what: 'sink-outage: outputs before the outage',
      done: (n) => n >= count * 0.15,
      stallMs: ctx.stallMs,
      firstProgressMs: Math.max(ctx.stallMs, ctx.startMs),
      abort: worker.gone,
    });
    const early = midRun(await reader.poll(redis), count, 'sink outage');
    if (early !== undefined) failures.push(early);
    const rssBefore = worker.rssMiB();
    await ctx.services.stopRedis();
    const cpuBefore = worker.cpuSeconds();
    const committedBefore = await ctx.kafka.committedTotal(groupId, input);
    let rssPeak = rssBefore;
    const started = performance.now();
    while (performance.now() - started < OUTAGE_MS && worker.alive()) {
      await sleep(1000);
      if (worker.alive()) rssPeak = Math.max(rssPeak, worker.rssMiB());
    }
    if (!worker.alive())
      throw new Error(`the worker died while the sink was down: ${worker.gone() ?? ''}`);
    const cores = (worker.cpuSeconds() - cpuBefore) / ((performance.now() - started) / 1000);
    const committedDuring = (await ctx.kafka.committedTotal(groupId, input)) - committedBefore;
    Object.assign(details, {
      rssBeforeMiB: Math.round(rssBefore),
      rssPeakMiB: Math.round(rssPeak),
      outageCores: Number(cores.toFixed(3)),
      committedDuringOutage: committedDuring,
    });
    if (rssPeak - rssBefore > MAX_RSS_GROWTH_MIB)
      failures.push(
        `RSS grew ${Math.round(rssPeak - rssBefore)} MiB while the sink was down (bound ${MAX_RSS_GROWTH_MIB})`,
      );
    if (cores > MAX_OUTAGE_CORES)
      failures.push(
        `the worker used ${cores.toFixed(2)} cores while the sink was down (bound ${MAX_OUTAGE_CORES}): re-inferring instead of pausing`,
      );
    if (committedDuring > 0)
      failures.push(`${committedDuring} records committed while their sink was down`);
    await ctx.services.startRedis();
    restarted = true;
    await waitForProgress(() => reader.poll(redis), {
      what: 'sink-outage: every record written once the sink is back',
      done: (n) => n >= count,
      stallMs: Math.max(ctx.stallMs, 90_000),
      abort: worker.gone,
      context: worker.output.bind(worker),
    });
    await waitCommitted(ctx, groupId, input, count, [worker], 'sink-outage: everything committed');
    const code = await terminate(worker, 90_000);
    if (code !== 0) failures.push(`SIGTERM exit ${code}, not 0`);
  } catch (error) {
    failures.push(failureText(error));
  } finally {
    if (!restarted) await ctx.services.startRedis();
    await worker.kill9();
  }
  await reader.poll(redis).catch(() => undefined);
  redis.disconnect();
  return atLeastOnceResult('sink-unavailable-60s', tag, count, reader.values(), failures, details);
}
