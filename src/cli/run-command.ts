// `hugot-stream run`: start the worker, stop it on SIGTERM/SIGINT (or when finite sources are
// read to the end), print a summary, and exit 0 only when everything in flight was drained.
import type { WorkerConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import { StreamWorker } from '../stream/stream-worker.ts';
import type { RouteCounters } from '../stream/route-runner.ts';

export async function runWorker(
  config: WorkerConfig,
  logger: Logger,
  out: (text: string) => void,
): Promise<number> {
  const started = performance.now();
  const worker = await StreamWorker.start(config, { logger });
  const stopSignal = new Promise<string>((resolve) => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const)
      process.once(signal, () => resolve(signal));
  });
  const stopProgress = showProgress(() => worker.counters());
  const reason = await Promise.race([worker.finished.then(() => 'end of input'), stopSignal]);
  stopProgress();
  logger.info({ reason }, 'stopping');
  let exitCode = 0;
  try {
    await worker.stop(config.shutdown.timeoutMs);
  } catch (err) {
    logger.error(
      { err },
      'shutdown did not drain in time; unfinished records were not acknowledged',
    );
    exitCode = 1;
  }
  out(summary(worker.counters(), performance.now() - started));
  return exitCode;
}

/** A one-line progress display on a terminal; nothing when standard error is a file or a pipe. */
function showProgress(counters: () => Record<string, RouteCounters>): () => void {
  if (process.stderr.isTTY !== true) return () => undefined;
  const started = performance.now();
  const timer = setInterval(() => {
    const totals = Object.values(counters()).reduce(
      (sum, c) => ({
        done: sum.done + c.written + c.deadLettered,
        dead: sum.dead + c.deadLettered,
      }),
      { done: 0, dead: 0 },
    );
    const rate = totals.done / Math.max((performance.now() - started) / 1000, 1e-3);
    process.stderr.write(
      `\r${totals.done} records done (${totals.dead} dead-lettered), ${rate.toFixed(1)}/s   `,
    );
  }, 250);
  timer.unref();
  return () => {
    clearInterval(timer);
    process.stderr.write('\r\x1b[K');
  };
}

function summary(counters: Record<string, RouteCounters>, elapsedMs: number): string {
  const lines = Object.entries(counters).map(
    ([name, c]) =>
      `${name}: ${c.received} records, ${c.written} written, ${c.deadLettered} dead-lettered` +
      (c.retried > 0 ? `, ${c.retried} retries` : ''),
  );
  return `${lines.join('\n')}\nfinished in ${(elapsedMs / 1000).toFixed(1)} s\n`;
}
