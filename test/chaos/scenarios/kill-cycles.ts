// kill -9 of a worker, again and again, mid-stream: each cycle starts a worker, lets it write part
// of the input, and kills it without warning. A last worker finishes. At-least-once must lose
// nothing; exactly-once must lose nothing and, read with read_committed, duplicate nothing.
import { kafkaSource, workerConfig } from '../routes.ts';
import {
  failureText,
  kafkaScenario,
  readAndCount,
  terminate,
  waitCommitted,
  waitOutputs,
  type ChaosContext,
  type ScenarioResult,
} from '../scenario.ts';

const PARTITIONS = 4;

export function killCycles(mode: 'at-least-once' | 'exactly-once', cycles: number) {
  return async (ctx: ChaosContext, count: number): Promise<ScenarioResult> => {
    const eos = mode === 'exactly-once';
    const name = eos ? 'kill9-exactly-once' : 'kill9-at-least-once';
    const { tag, input, output, groupId } = await kafkaScenario(
      ctx,
      eos ? 'eos' : 'alo',
      count,
      PARTITIONS,
    );
    const failures: string[] = [];
    const config = workerConfig({
      pipeline: eos ? 'embed' : 'classify',
      brokers: ctx.services.brokers,
      mode,
      source: kafkaSource(input, groupId, eos ? { transactionTimeoutMs: 10_000 } : {}),
      sink: { type: 'kafka', topic: output },
      dlq: { type: 'kafka', topic: `${tag}-dlq` },
    });
    await ctx.kafka.createTopic(`${tag}-dlq`, 1);
    // Each cycle waits for about this many new output records (end offsets, aborted ones too)
    // before the kill, with jitter, so that kills land at different points of a batch.
    const step = Math.max(10, Math.floor(count / (cycles * 2.5)));
    let kills = 0;
    try {
      for (let cycle = 0; cycle < cycles; cycle += 1) {
        if ((await ctx.kafka.committedTotal(groupId, input)) >= count) break;
        const worker = ctx.workers.start(`${name}-c${cycle}`, config);
        const target = (await ctx.kafka.endTotal(output)) + Math.ceil(step * (0.5 + Math.random()));
        await waitOutputs(ctx, output, target, worker, `${name}: outputs in cycle ${cycle}`);
        await worker.kill9();
        kills += 1;
      }
      ctx.log(`${name}: ${kills} kill -9 cycles done; a last worker finishes`);
      const last = ctx.workers.start(`${name}-final`, config);
      await waitCommitted(
        ctx,
        groupId,
        input,
        count,
        [last],
        `${name}: the last worker commits all ${count}`,
      );
      const code = await terminate(last, 90_000);
      if (code !== 0) failures.push(`the last worker's SIGTERM exit was ${code}, not 0`);
    } catch (error) {
      failures.push(failureText(error));
    }
    if (kills < cycles)
      failures.push(
        `only ${kills} of ${cycles} kill cycles ran before the input was done (too few records)`,
      );
    const counted = await readAndCount(ctx, { tag, count, output, eos }, failures);
    const { outputs } = counted;
    const sizes = outputs.slice(0, 200).map((r) => r.value?.length ?? 0);
    return {
      name,
      records: count,
      lost: counted.lost,
      duplicates: counted.duplicates,
      mode,
      failures,
      details: {
        kills,
        outputs: outputs.length,
        meanOutputBytes: Math.round(sizes.reduce((a, b) => a + b, 0) / Math.max(1, sizes.length)),
      },
    };
  };
}
