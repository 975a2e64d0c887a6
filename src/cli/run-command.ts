// `hugot-stream run`: start the worker, stop it on SIGTERM/SIGINT/SIGHUP (or when finite sources are
// read to the end), print a summary, and exit 0 only when everything in flight was drained.
import type { WorkerConfig } from '../config/schema.ts';
import type { Logger } from '../logger.ts';
import { StreamWorker } from '../worker/stream-worker.ts';
import type { RouteCounters } from '../route/route-runner.ts';
import { startStatsLine } from '../telemetry/stats-line.ts';
import { Telemetry } from '../telemetry/telemetry.ts';
import { showProgress } from './progress-bar.ts';
import { pullProgress } from './pull-progress.ts';
import { hubSettings } from '../hub/hub-settings.ts';
import { settleHubModels } from '../worker/hub-models.ts';
import { StartupTimeoutError } from '../errors.ts';
import { startupDependencies } from '../worker/startup-dependencies.ts';
import { compileWorkerPlan } from '../worker/worker-plan.ts';
import { checkModelFit } from '../engine/model-fit.ts';
import { waitForDependencies } from '../worker/startup-wait.ts';

const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/** How long /livez stays red after a source failed for good, before the process exits. */
const FAILED_LINGER_MS = 2_000;

export async function runWorker(
  config: WorkerConfig,
  logger: Logger,
  out: (text: string) => void,
): Promise<number> {
  const started = performance.now();
  // Hub models become folders first: the plan's model specs need their paths.
  const progress = pullProgress(process.stderr);
  try {
    await settleHubModels(config, { settings: hubSettings(), logger, onEvent: progress.onEvent });
  } finally {
    progress.stop();
  }
  // Secrets are read here, once, before anything listens or connects: a mistake is a ConfigError.
  const plan = compileWorkerPlan(config, logger);
  // Before waiting for brokers: a missing folder or a model that does not fit is found at once.
  await checkModelFit(plan.models, config.pipelines);
  // Listened for before the worker starts: a source can be writing (and a deployment can send
  // SIGTERM) while start() still waits on a slower route, and Node's default action would kill
  // the process mid-write. A signal during start() stops the worker as soon as it is up.
  // SIGHUP (the terminal went away) drains too. A second signal during the drain gives up the
  // queued records at once, but the running batches are still written and what was written is
  // committed before the exit: Node's default action there would lose that final commit.
  let duringDrain: ((signal: string) => void) | undefined = undefined;
  const stopSignal = new Promise<string>((resolve) => {
    for (const signal of STOP_SIGNALS)
      process.on(signal, () => (duringDrain === undefined ? resolve(signal) : duringDrain(signal)));
  });
  // Before the models load, so /livez answers and /readyz says why it is not ready yet.
  const telemetry = await Telemetry.start(config.telemetry, logger);
  const stopWaiting = new AbortController();
  void stopSignal.then(() => stopWaiting.abort());
  let waited: 'ready' | 'stopped';
  try {
    waited = await waitForDependencies(startupDependencies(plan), {
      logger,
      timeoutMs: config.startup.timeoutMs,
      signal: stopWaiting.signal,
      onWaiting: (missing) => telemetry.health.waitingFor(missing),
    });
  } catch (err) {
    await telemetry.close();
    if (!(err instanceof StartupTimeoutError)) throw err;
    logger.error({ err }, `exiting 1: ${err.message}`);
    return 1;
  }
  if (waited === 'stopped') {
    logger.info({}, 'stopped while start-up waited; nothing was read');
    await telemetry.close();
    return 0;
  }
  let worker: StreamWorker;
  try {
    worker = await StreamWorker.fromPlan(plan, { logger, telemetry: telemetry.forWorker(logger) });
  } catch (err) {
    await telemetry.close();
    throw err;
  }
  const { exitOnSourceFailure } = config.telemetry.health;
  const unhealthy = new Promise<string>((resolve) =>
    worker.health.onFailure((failure) => {
      logger.error(
        { failure, exitOnSourceFailure },
        exitOnSourceFailure
          ? 'a source failed for good; /livez fails, draining and exiting'
          : 'a source failed for good; /livez fails (telemetry.health.exitOnSourceFailure is false: staying up)',
      );
      if (exitOnSourceFailure) resolve('a source failed for good');
    }),
  );
  const stopStats =
    config.telemetry.enabled && process.stderr.isTTY !== true
      ? startStatsLine({
          intervalMs: config.telemetry.statsIntervalMs,
          logger,
          counters: () => worker.counters(),
          readiness: () => worker.health.readiness(),
        })
      : () => undefined;
  const stopProgress = showProgress(() => worker.counters());
  // A source that gave up for good (the bound is the source's to set) stops the worker, exit 1.
  let failedSource: string | undefined;
  const sourceFailed = new Promise<string>((resolve) =>
    worker.onSourceHealth((route, health) => {
      if (health.state !== 'failed') return;
      failedSource = `route ${route}: ${health.reason}`;
      resolve('a source failed for good');
    }),
  );
  const reason = await Promise.race([
    worker.finished.then(() => 'end of input'),
    stopSignal,
    sourceFailed,
    unhealthy,
  ]);
  stopProgress();
  stopStats();
  logger.info({ reason, timeoutMs: config.shutdown.timeoutMs }, 'stopping');
  let hurried = false;
  duringDrain = (signal) => {
    logger.warn(
      { signal },
      hurried
        ? 'already stopping as fast as is safe; the running batches are written and committed first'
        : 'stop signal during the drain: giving up queued records now (not acknowledged; they will be delivered again); exiting once the running batches are written and committed',
    );
    if (!hurried) worker.giveUpQueued();
    hurried = true;
  };
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
  if (failedSource !== undefined) {
    logger.error({ source: failedSource }, 'exiting 1: a source failed for good');
    exitCode = 1;
  }
  // Also for an outage past telemetry.health.sourceOutageMs (docs/operations.md#exit-codes).
  if (worker.health.failed !== undefined && exitOnSourceFailure) exitCode = 1;
  const elapsedMs = performance.now() - started;
  logger.info(
    { summary: { reason, exitCode, elapsedMs: Math.round(elapsedMs), routes: worker.counters() } },
    'summary',
  );
  // A worker dying of an outage keeps answering /livez red a moment longer: otherwise the window
  // between "failed for good" and the exit is only the drain, often shorter than one probe.
  if (worker.health.failed !== undefined && exitOnSourceFailure)
    await new Promise((resolve) => setTimeout(resolve, FAILED_LINGER_MS));
  await telemetry.close();
  out(summary(worker.counters(), elapsedMs));
  // Every client was closed and no batch runs any more (stop waited for them), so exiting now
  // is safe; a handle someone forgot must not keep a stopped worker alive.
  const exitAnyway = setTimeout(() => {
    logger.warn({ exitCode }, 'handles still open after the worker stopped; exiting anyway');
    process.exit(exitCode);
  }, 2000);
  exitAnyway.unref();
  return exitCode;
}

function summary(counters: Record<string, RouteCounters>, elapsedMs: number): string {
  const lines = Object.entries(counters).map(
    ([name, c]) =>
      `${name}: ${c.received} records, ${c.written} written, ${c.deadLettered} dead-lettered` +
      (c.retried > 0 ? `, ${c.retried} retries` : '') +
      (c.truncated > 0 ? `, ${c.truncated} texts cut before tokenization` : ''),
  );
  return `${lines.join('\n')}\nfinished in ${(elapsedMs / 1000).toFixed(1)} s\n`;
}
