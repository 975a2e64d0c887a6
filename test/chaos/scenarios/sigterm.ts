// SIGTERM while the worker is busy with a full input: it must stop admitting, finish or abandon
// what is in flight, commit, and exit 0 within its shutdown budget. Its final commit must cover
// exactly what it wrote: every record below a partition's committed offset has its output, and no
// output lies beyond it (or a restart would redo it). A second worker then finishes the input.
import { idOf, kafkaSource, workerConfig } from '../routes.ts';
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
const SHUTDOWN_MS = 30_000;

export async function sigtermUnderLoad(ctx: ChaosContext, count: number): Promise<ScenarioResult> {
  const { tag, input, output, groupId } = await kafkaScenario(ctx, 'term', count, PARTITIONS);
  const failures: string[] = [];
  const details: Record<string, unknown> = {};
  const config = workerConfig({
    brokers: ctx.services.brokers,
    threads: 2,
    source: kafkaSource(input, groupId),
    sink: { type: 'kafka', topic: output },
    extra: { shutdown: { timeoutMs: SHUTDOWN_MS } },
  });
  const worker = ctx.workers.start('sigterm', config);
  try {
    await waitOutputs(
      ctx,
      output,
      Math.ceil(count * 0.25),
      worker,
      'sigterm: outputs before the signal',
    );
    const early = midRun(await ctx.kafka.endTotal(output), count, 'SIGTERM');
    if (early !== undefined) failures.push(early);
    const signalled = performance.now();
    // The budget plus a margin for a loaded machine; past it the worker hung.
    const code = await terminate(worker, SHUTDOWN_MS + 30_000);
    const exitMs = Math.round(performance.now() - signalled);
    Object.assign(details, { exitMs, exit: code });
    if (code !== 0)
      failures.push(
        `SIGTERM exit ${code} after ${exitMs} ms, not 0: ${worker.output().slice(-800)}`,
      );
    const committed = await ctx.kafka.committed(groupId, input);
    details['committedAtExit'] = [...committed.values()].reduce((a, b) => a + Math.max(0, b), 0);
    const written = await ctx.kafka.read(output, {
      readCommitted: false,
      enough: () => true,
      quietMs: 3000,
    });
    const byPartition = new Map<number, Set<number>>();
    for (const r of written) {
      const n = Number(idOf(r.value)?.slice(tag.length + 1));
      if (!Number.isInteger(n)) continue;
      const p = n % PARTITIONS;
      const set = byPartition.get(p) ?? new Set<number>();
      set.add(Math.floor(n / PARTITIONS));
      byPartition.set(p, set);
    }
    for (let p = 0; p < PARTITIONS; p += 1) {
      const end = Math.max(0, committed.get(p) ?? 0);
      const offsets = byPartition.get(p) ?? new Set<number>();
      const beyond = [...offsets].filter((o) => o >= end).length;
      let missing = 0;
      for (let o = 0; o < end; o += 1) if (!offsets.has(o)) missing += 1;
      if (beyond > 0)
        failures.push(`partition ${p}: ${beyond} outputs beyond the final commit (${end})`);
      if (missing > 0)
        failures.push(
          `partition ${p}: ${missing} records below the final commit (${end}) have no output`,
        );
    }
    const next = ctx.workers.start('sigterm-next', config);
    await waitCommitted(
      ctx,
      groupId,
      input,
      count,
      [next],
      'sigterm: a second worker finishes the input',
    );
    const nextCode = await terminate(next, SHUTDOWN_MS + 30_000);
    if (nextCode !== 0) failures.push(`the second worker's SIGTERM exit was ${nextCode}`);
  } catch (error) {
    failures.push(failureText(error));
  } finally {
    await ctx.workers.killAll();
  }
  const outputs = await kafkaOutputValues(ctx, output, count);
  return atLeastOnceResult('sigterm-under-load', tag, count, outputs, failures, details);
}
