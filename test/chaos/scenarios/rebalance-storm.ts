// A rebalance storm: up to four workers in one consumer group, one joining or one leaving
// (SIGTERM) every few seconds while the input flows, so that the group rebalances again and
// again mid-batch. At-least-once must lose nothing; exactly-once must lose nothing and, read with
// read_committed, duplicate nothing. Every worker that leaves must drain and exit 0.
import { setTimeout as sleep } from 'node:timers/promises';
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  failureText,
  kafkaScenario,
  readAndCount,
  scenarioRecords,
  terminate,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';
import type { ChaosWorker } from '../worker.ts';

const PARTITIONS = 8;
const MAX_WORKERS = 4;
/** A join or a leave every 1.5–3 s: often enough that rebalances overlap batches and drains. */
const EVENT_MS = [1_500, 3_000] as const;
const FEED_RECORDS = 250;
const FEED_MS = 1_000;
/** Joins and leaves the flow must see, or the storm tested too little. */
const MIN_EVENTS = 10;

export function rebalanceStorm(mode: 'at-least-once' | 'exactly-once') {
  return async (ctx: ChaosContext, count: number): Promise<ScenarioResult> => {
    const eos = mode === 'exactly-once';
    const name = eos ? 'rebalance-storm-exactly-once' : 'rebalance-storm-at-least-once';
    // The input arrives while the storm rages, FEED_RECORDS every FEED_MS, rather than all
    // before it: otherwise two workers finish it before a storm worth the name has begun.
    const { tag, input, output, groupId } = await kafkaScenario(
      ctx,
      eos ? 'storm-eos' : 'storm',
      0,
      PARTITIONS,
    );
    const records = scenarioRecords(tag, count, PARTITIONS);
    const feeding = (async () => {
      for (let i = 0; i < records.length; i += FEED_RECORDS) {
        await ctx.kafka.produce(input, records.slice(i, i + FEED_RECORDS));
        await sleep(FEED_MS);
      }
    })();
    feeding.catch(() => undefined); // awaited below; a failed send must not go unhandled meanwhile
    await ctx.kafka.createTopic(`${tag}-dlq`, 1);
    const config = workerConfig({
      brokers: ctx.services.brokers,
      mode,
      source: kafkaSource(input, groupId, {
        maxInFlightPerPartition: 256,
        ...(eos ? { transactionTimeoutMs: 10_000 } : {}),
      }),
      sink: { type: 'kafka', topic: output },
      dlq: { type: 'kafka', topic: `${tag}-dlq` },
    });
    const failures: string[] = [];
    const workers: ChaosWorker[] = [];
    const leaving: Promise<void>[] = [];
    let started = 0;
    /** Joins and leaves while the input flowed (the first two workers and the final stops aside). */
    let joins = 0;
    let leaves = 0;
    const join = (): void => {
      workers.push(ctx.workers.start(`${name}-w${started}`, config));
      started += 1;
    };
    const leave = (worker: ChaosWorker): void => {
      leaving.push(
        terminate(worker, 90_000).then((code) => {
          if (code !== 0) failures.push(`${worker.name} left with exit ${code}, not 0`);
        }),
      );
    };
    try {
      join();
      join();
      let committed = 0;
      let lastChange = performance.now();
      while (committed < count) {
        await sleep(EVENT_MS[0] + Math.random() * (EVENT_MS[1] - EVENT_MS[0]));
        const now = await ctx.kafka.committedTotal(groupId, input);
        if (now !== committed) lastChange = performance.now();
        committed = now;
        if (committed >= count) break;
        if (performance.now() - lastChange > Math.max(ctx.stallMs, ctx.startMs))
          throw new Error(
            `${name}: commits stood still at ${committed} of ${count} for ${ctx.stallMs} ms`,
          );
        const alive = workers.filter((w) => w.alive() && !w.stopping);
        const canLeave = alive.filter((w) => w.isRunning());
        if (alive.length < MAX_WORKERS && (canLeave.length <= 1 || Math.random() < 0.5)) {
          join();
          joins += 1;
        } else {
          const worker = canLeave[Math.floor(Math.random() * canLeave.length)];
          if (worker !== undefined) {
            worker.stopping = true;
            leave(worker);
            leaves += 1;
          }
        }
      }
      await feeding;
      ctx.log(`${name}: ${joins} joins and ${leaves} leaves while ${count} records flowed`);
      for (const w of workers.filter((w) => w.alive() && !w.stopping)) {
        w.stopping = true;
        leave(w);
      }
      await Promise.all(leaving);
    } catch (error) {
      failures.push(failureText(error));
    } finally {
      for (const w of workers) await w.kill9();
    }
    if (joins + leaves < MIN_EVENTS)
      failures.push(
        `only ${joins + leaves} joins and leaves before the input was done (too few records)`,
      );
    const counted = await readAndCount(ctx, { tag, count, output, eos }, failures);
    const { outputs } = counted;
    return {
      name,
      records: count,
      lost: counted.lost,
      duplicates: counted.duplicates,
      mode,
      failures,
      details: { joins, leaves, workers: started, outputs: outputs.length },
    };
  };
}
