// Every number the README's status paragraph quotes must come from a committed result line under
// bench/results/ that says what produced it (command, commit, machine, date), so that no figure is
// worked out by hand or kept from a run nobody can find (issue 37). A quoted number matches a
// value of a line at the number's own precision (8.44 matches 8.442); a quoted range a–b needs
// both ends in one committed file (one run's spread, or the runs of one results file).
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const RESULTS = join(ROOT, 'bench', 'results');

interface ResultLine {
  file: string;
  where: string;
  /** Every number in the line: its values, and those inside its strings and keys ("threads=8"). */
  numbers: number[];
  value: Record<string, unknown>;
}

/** A number standing alone: not part of a name like H200, fp32, AVX-512, Llama-100M or cuda:0. */
const NUMBER = /(?<![\w.:/-])\d+(?:\.\d+)?(?![\w.]*\w)/g;

function numbersIn(value: unknown, into: number[]): void {
  if (typeof value === 'number') into.push(value);
  else if (typeof value === 'string')
    for (const match of value.matchAll(NUMBER)) into.push(Number(match[0]));
  else if (Array.isArray(value)) for (const item of value) numbersIn(item, into);
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      numbersIn(key, into);
      numbersIn(item, into);
    }
}

function resultLines(): ResultLine[] {
  const lines: ResultLine[] = [];
  for (const entry of readdirSync(RESULTS, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const text = readFileSync(path, 'utf8');
    const values = entry.name.endsWith('.jsonl')
      ? text.split('\n').filter((l) => l.trim() !== '')
      : entry.name.endsWith('.json')
        ? [text]
        : [];
    values.forEach((raw, index) => {
      const value = JSON.parse(raw) as Record<string, unknown>;
      const numbers: number[] = [];
      numbersIn(value, numbers);
      const file = relative(ROOT, path);
      lines.push({ file, where: `${file}:${index + 1}`, numbers, value });
    });
  }
  return lines;
}

/** The paragraph that starts with **Status:**, without link targets and code spans. */
function statusParagraph(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('**Status:**');
  const end = readme.indexOf('\n\n', start);
  return readme
    .slice(start, end === -1 ? undefined : end)
    .replace(/\]\([^)]*\)/g, ']')
    .replace(/`[^`]*`/g, ' ');
}

/** Whether `value` rounds to `quoted` at the quoted number's precision. */
function matches(quoted: string, value: number): boolean {
  const decimals = quoted.split('.')[1]?.length ?? 0;
  return Math.abs(value - Number(quoted)) <= 0.5 * 10 ** -decimals + 1e-9;
}

/** The run record a committed line must carry; the missing fields, empty when complete. */
function missingRunFields(value: Record<string, unknown>): string[] {
  const run = value['run'] as Record<string, unknown> | undefined;
  if (run === undefined) return ['run'];
  const machine = (run['machine'] ?? {}) as Record<string, unknown>;
  return [
    ...['command', 'commit', 'date'].filter((k) => typeof run[k] !== 'string' || run[k] === ''),
    ...(typeof machine['cpu'] === 'string' ? [] : ['machine.cpu']),
    ...(typeof machine['cores'] === 'number' ? [] : ['machine.cores']),
    ...(Array.isArray(machine['isa']) ? [] : ['machine.isa']),
  ];
}

describe("README's status figures", () => {
  const lines = resultLines();
  const recorded = lines.filter((line) => missingRunFields(line.value).length === 0);
  const status = statusParagraph();
  const quoted = [...status.matchAll(NUMBER)].map((m) => m[0]);

  it('finds the status paragraph and numbers in it', () => {
    expect(status.startsWith('**Status:**')).toBe(true);
    expect(quoted.length).toBeGreaterThan(10);
  });

  it('finds each quoted number in a committed line that records its run', () => {
    const unsourced = quoted.filter(
      (number) => !recorded.some((line) => line.numbers.some((v) => matches(number, v))),
    );
    expect(unsourced, 'numbers with no committed bench/results line recording its run').toEqual([]);
  });

  it('finds both ends of each quoted range in one committed file', () => {
    const ranges = [...status.matchAll(/(\d+(?:\.\d+)?)–(\d+(?:\.\d+)?)/g)];
    expect(ranges.length).toBeGreaterThan(0);
    const inFile = (file: string, quotedNumber: string): boolean =>
      recorded.some((l) => l.file === file && l.numbers.some((v) => matches(quotedNumber, v)));
    const unsourced = ranges
      .filter(
        ([, low = '', high = '']) =>
          !recorded.some((line) => inFile(line.file, low) && inFile(line.file, high)),
      )
      .map(([range]) => range);
    expect(unsourced).toEqual([]);
  });

  it('reads a run record only where one is complete', () => {
    expect(missingRunFields({ run: { command: 'node x', commit: 'abc', date: 'd' } })).toEqual([
      'machine.cpu',
      'machine.cores',
      'machine.isa',
    ]);
    expect(missingRunFields({})).toEqual(['run']);
  });
});
