import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { progressText } from '../../../src/cli/progress-bar.ts';
import { countRecordLines, isBlankLine } from '../../../src/connectors/file/record-lines.ts';
import { progressOf } from '../../../src/telemetry/progress.ts';
import { scratchDir } from '../../helpers/file-route.ts';

const dir = scratchDir('run-progress');
const counters = (written: number, deadLettered: number, total?: number) => ({
  received: written + deadLettered,
  written,
  deadLettered,
  retried: 0,
  truncated: 0,
  ...(total !== undefined ? { total } : {}),
});

describe('run progress', () => {
  it('gives done/total, percentage, rate and seconds left from counters that know a total', () => {
    const progress = progressOf([counters(30, 10, 200)], 8000);
    expect(progress).toEqual({
      done: 40,
      deadLettered: 10,
      perSecond: 5,
      total: 200,
      percent: 20,
      etaSeconds: 32,
    });
    expect(progressText(progress)).toBe(
      '20.0% | 40/200 records | 5.0/s | 32s left | 10 dead-lettered',
    );
  });

  it('sums routes, with a total only when every route has one', () => {
    expect(progressOf([counters(5, 0, 10), counters(5, 0, 30)], 1000)).toMatchObject({
      done: 10,
      total: 40,
      percent: 25,
    });
    const unbounded = progressOf([counters(5, 0, 10), counters(7, 1)], 2000);
    expect(unbounded).toEqual({ done: 13, deadLettered: 1, perSecond: 6.5 });
    expect(progressText(unbounded)).toBe('13 records | 6.5/s | 1 dead-lettered');
  });

  it('knows no time left before the first record is done', () => {
    const progress = progressOf([counters(0, 0, 50)], 3000);
    expect(progress.etaSeconds).toBeUndefined();
    expect(progressText(progress)).toContain('time left unknown');
  });

  it("counts a file's records as the reader takes them: blank lines, CRLF and a last line without newline", async () => {
    expect(isBlankLine(Buffer.from(' \t\r'))).toBe(true);
    expect(isBlankLine(Buffer.from('\u00a0\ufeff', 'utf8'))).toBe(true);
    expect(isBlankLine(Buffer.from('{}'))).toBe(false);
    expect(isBlankLine(Buffer.from([0xff]))).toBe(false);
    const file = dir.file('count.jsonl');
    const line = `{"text":"${'x'.repeat(100_000)}"}`;
    // Long lines cross the reader's chunks; the blank ones are no records.
    await writeFile(file, [line, '', '  ', line + '\r', '\u00a0', line, line].join('\n'));
    expect(await countRecordLines(file)).toBe(4);
  });
});
