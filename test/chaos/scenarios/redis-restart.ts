// Redis (source and sink of a Redis Streams route) stops under load and comes back with its
// append-only file. The worker must ride it out and recover by itself: every entry's output lands.
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForProgress } from '../../helpers/progress.ts';
import { fillStream, redisClient, StreamReader } from '../redis-tools.ts';
import { workerConfig } from '../routes.ts';
import {
  atLeastOnceResult,
  failureText,
  midRun,
  scenarioRecords,
  terminate,
  unique,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

const OUTAGE_MS = 15_000;

export async function redisRestart(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const tag = unique('rds');
  const input = `${tag}-in`;
  const output = `${tag}-out`;
  const failures: string[] = [];
  const redis = redisClient(ctx.services.redisUrl);
  const reader = new StreamReader(output);
  let restarted = false;
  await fillStream(redis, input, scenarioRecords(tag, count, 1));
  const worker = ctx.workers.start(
    'redis-restart',
    workerConfig({
      redisUrl: ctx.services.redisUrl,
      source: { type: 'redis-stream', stream: input, group: `${tag}-group`, claimIdleMs: 10_000 },
      sink: { type: 'redis-stream', stream: output },
      dlq: { type: 'redis-stream', stream: `${tag}-dlq` },
    }),
  );
  try {
    await waitForProgress(() => reader.poll(redis), {
      what: 'redis-restart: outputs before the outage',
      done: (n) => n >= count * 0.2,
      stallMs: ctx.stallMs,
      firstProgressMs: Math.max(ctx.stallMs, ctx.startMs),
      abort: worker.gone,
    });
    const early = midRun(await reader.poll(redis), count, 'Redis stop');
    if (early !== undefined) failures.push(early);
    await ctx.services.stopRedis();
    await sleep(OUTAGE_MS);
    if (!worker.alive()) failures.push(`the worker died during the outage: ${worker.gone() ?? ''}`);
    await ctx.services.startRedis();
    restarted = true;
    await waitForProgress(() => reader.poll(redis), {
      what: 'redis-restart: every entry written after the restart',
      done: (n) => n >= count,
      stallMs: Math.max(ctx.stallMs, 90_000),
      abort: worker.gone,
      context: worker.output.bind(worker),
    });
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
  return atLeastOnceResult('redis-restart', tag, count, reader.values(), failures, {
    outageMs: OUTAGE_MS,
    entries: reader.entries,
  });
}
