// The terminal's progress display (cli-progress): for a file, a bar with done/total, percentage,
// rate and time left; for a source without an end (Kafka, Redis, standard input), the count and
// rate. Nothing when standard error is not a terminal: the periodic stats line serves logs there.
import cliProgress, { type Options, type Params } from 'cli-progress';
import { progressOf, type Progress, type RouteProgress } from '../telemetry/progress.ts';

const REDRAW_MS = 250;

/** The display's text for the figures: what the bar shows beside the bar itself. */
export function progressText(progress: Progress, bar?: string): string {
  const dead = `${progress.deadLettered} dead-lettered`;
  const rate = `${progress.perSecond.toFixed(1)}/s`;
  if (progress.total === undefined) return `${progress.done} records | ${rate} | ${dead}`;
  const left =
    progress.etaSeconds === undefined
      ? 'time left unknown'
      : `${cliProgress.Format.TimeFormat(progress.etaSeconds, { autopaddingChar: '0' }, 1)} left`;
  return [
    `${bar === undefined ? '' : `${bar} `}${(progress.percent ?? 0).toFixed(1)}%`,
    `${progress.done}/${progress.total} records`,
    rate,
    left,
    dead,
  ].join(' | ');
}

/** Starts the display on a terminal; returns the function that removes it. */
export function showProgress(
  counters: () => Record<string, RouteProgress>,
  stream: NodeJS.WriteStream = process.stderr,
): () => void {
  if (stream.isTTY !== true) return () => undefined;
  const started = performance.now();
  let latest = progressOf([], 0);
  const bar = new cliProgress.SingleBar({
    stream,
    fps: 1000 / REDRAW_MS,
    hideCursor: true,
    clearOnComplete: true,
    barsize: 24,
    format: (options: Options, params: Params) =>
      progressText(
        latest,
        latest.total === undefined
          ? undefined
          : cliProgress.Format.BarFormat(params.progress, options),
      ),
  });
  bar.start(0, 0);
  const timer = setInterval(() => {
    latest = progressOf(Object.values(counters()), performance.now() - started);
    if (latest.total !== undefined && latest.total !== bar.getTotal()) bar.setTotal(latest.total);
    bar.update(latest.done);
  }, REDRAW_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    bar.stop();
  };
}
