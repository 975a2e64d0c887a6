// A pull's progress on standard error: a bar of bytes (all files together) on a terminal, JSON
// lines off one (at most one progress line a second, plus one per finished file), so a log
// collector sees the same figures the bar shows.
import cliProgress from 'cli-progress';
import type { PullEvent } from '../hub/pull.ts';

const JSON_EVERY_MS = 1000;

/** Bytes as a person reads them on the bar: 512 B, 40.0 kB, 22.9 MB. */
export function sizeText(bytes: number): string {
  if (bytes < 1000) return `${bytes} B`;
  if (bytes < 1_000_000) return `${(bytes / 1000).toFixed(1)} kB`;
  if (bytes < 1_000_000_000) return `${(bytes / 1_000_000).toFixed(1)} MB`;
  return `${(bytes / 1_000_000_000).toFixed(2)} GB`;
}

export interface PullProgress {
  onEvent: (event: PullEvent) => void;
  stop: () => void;
}

export function pullProgress(
  stream: NodeJS.WriteStream = process.stderr,
  now: () => number = () => performance.now(),
): PullProgress {
  const done = new Map<string, number>();
  let total = 0;
  let repo = '';
  const sum = (): number => [...done.values()].reduce((a, b) => a + b, 0);
  if (stream.isTTY === true) {
    const bar = new cliProgress.SingleBar({
      stream,
      hideCursor: true,
      clearOnComplete: false,
      barsize: 24,
      format: '{repo} {bar} {percentage}% | {value}/{total} | {files}',
      formatValue: (value, options, type) =>
        type === 'value' || type === 'total'
          ? sizeText(value)
          : cliProgress.Format.ValueFormat(value, options, type),
    });
    let files = 0;
    let count = 0;
    let started = false;
    return {
      onEvent: (event) => {
        if (event.kind === 'start') {
          repo = event.repo;
          count = event.files.length;
          total = event.files.reduce((a, f) => a + (f.size ?? 0), 0);
          bar.start(total, 0, { repo, files: `0/${count} files` });
          started = true;
        } else if (event.kind === 'progress') {
          done.set(event.path, event.done);
          bar.update(sum(), { files: `${files}/${count} files` });
        } else if (event.kind === 'file-done') {
          files += 1;
          bar.update(sum(), { files: `${files}/${count} files` });
        }
      },
      stop: () => {
        if (started) bar.stop();
        started = false;
      },
    };
  }
  let last = -Infinity;
  const line = (fields: Record<string, unknown>): void => {
    stream.write(`${JSON.stringify({ event: 'pull', repo, ...fields })}\n`);
  };
  return {
    onEvent: (event) => {
      if (event.kind === 'start') {
        repo = event.repo;
        total = event.files.reduce((a, f) => a + (f.size ?? 0), 0);
        line({
          state: 'start',
          commit: event.commit,
          files: event.files.length,
          totalBytes: total,
        });
      } else if (event.kind === 'progress') {
        done.set(event.path, event.done);
        if (now() - last < JSON_EVERY_MS) return;
        last = now();
        line({ state: 'progress', doneBytes: sum(), totalBytes: total, file: event.path });
      } else if (event.kind === 'file-done') {
        line({
          state: 'file',
          file: event.path,
          bytes: event.size,
          doneBytes: sum(),
          totalBytes: total,
        });
      } else {
        line({
          state: 'done',
          commit: event.commit,
          path: event.path,
          doneBytes: sum(),
          totalBytes: total,
        });
      }
    },
    stop: () => undefined,
  };
}
