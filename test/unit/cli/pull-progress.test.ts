// A pull's progress: JSON lines off a terminal (at most one progress line a second, one per file),
// a bar on one; both from the same events.
import { describe, expect, it } from 'vitest';
import { pullProgress } from '../../../src/cli/pull-progress.ts';

function fakeStream(isTTY: boolean): { stream: NodeJS.WriteStream; text: () => string } {
  const chunks: string[] = [];
  const stream = {
    isTTY,
    columns: 100,
    write: (chunk: string) => chunks.push(chunk) > 0,
    cursorTo: () => true,
    clearLine: () => true,
    moveCursor: () => true,
    on: () => stream,
    removeListener: () => stream,
  } as unknown as NodeJS.WriteStream;
  return { stream, text: () => chunks.join('') };
}

describe('pull progress', () => {
  it('off a terminal: start, throttled progress, each file, done, with byte totals', () => {
    const { stream, text } = fakeStream(false);
    let clock = 0;
    const { onEvent } = pullProgress(stream, () => clock);
    onEvent({
      kind: 'start',
      repo: 'o/r',
      commit: 'c'.repeat(40),
      files: [
        { path: 'a', size: 10 },
        { path: 'b', size: 30 },
      ],
    });
    onEvent({ kind: 'progress', path: 'a', done: 5, size: 10 });
    clock += 10;
    onEvent({ kind: 'progress', path: 'a', done: 10, size: 10 });
    onEvent({ kind: 'file-done', path: 'a', size: 10 });
    clock += 2000;
    onEvent({ kind: 'progress', path: 'b', done: 30, size: 30 });
    onEvent({ kind: 'file-done', path: 'b', size: 30 });
    onEvent({ kind: 'done', repo: 'o/r', commit: 'c'.repeat(40), path: '/snap' });
    const lines = text()
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l['state'])).toEqual([
      'start',
      'progress',
      'file',
      'progress',
      'file',
      'done',
    ]);
    expect(lines[0]).toMatchObject({ event: 'pull', repo: 'o/r', files: 2, totalBytes: 40 });
    expect(lines[2]).toMatchObject({ file: 'a', doneBytes: 10 });
    expect(lines.at(-1)).toMatchObject({ path: '/snap', doneBytes: 40, totalBytes: 40 });
  });

  it('on a terminal: a bar with the bytes and files, no JSON', () => {
    const { stream, text } = fakeStream(true);
    const progress = pullProgress(stream);
    progress.onEvent({
      kind: 'start',
      repo: 'o/r',
      commit: 'c'.repeat(40),
      files: [{ path: 'a', size: 2_500_000 }],
    });
    progress.onEvent({ kind: 'progress', path: 'a', done: 2_500_000, size: 2_500_000 });
    progress.onEvent({ kind: 'file-done', path: 'a', size: 2_500_000 });
    progress.stop();
    expect(text()).toContain('o/r');
    expect(text()).toContain('2.5 MB/2.5 MB');
    expect(text()).toContain('1/1 files');
    expect(text()).not.toContain('{"event"');
  });
});
