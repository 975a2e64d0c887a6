// The dead-letter codes are a contract with whoever reads a DLQ, and docs/configuration.md is
// where that reader learns them: its table must hold every code of src/route/dead-letter-codes.ts,
// no code that is gone, and the same stage, retriability and meaning.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  CancelledError,
  ConfigError,
  DeadlineExceededError,
  deserializeError,
  InferenceError,
  InputError,
  ModelFolderError,
  OutputInvalidError,
  OutputRejectedError,
  OverloadedError,
  ProviderUnavailableError,
  serializeError,
  SinkError,
  UnknownPipelineError,
  WorkerCrashedError,
  type HugotError,
} from '../../../src/errors.ts';
import { ImageRefusedError } from '../../../src/route/image-input.ts';
import {
  DEAD_LETTER_CODES,
  deadLetterCodeOf,
  isDeadLetterCode,
  type DeadLetterCode,
} from '../../../src/route/dead-letter-codes.ts';

const DOCS = join(import.meta.dirname, '..', '..', '..', 'docs', 'configuration.md');
const HEADING = '### Dead-letter codes';

/** The cells of the docs table's rows under HEADING, header and rule left out. */
function documentedRows(): string[][] {
  const lines = readFileSync(DOCS, 'utf8').split('\n');
  const start = lines.indexOf(HEADING);
  expect(start, `${HEADING} in docs/configuration.md`).toBeGreaterThanOrEqual(0);
  const after = lines.slice(start + 1);
  const end = after.findIndex((line) => line.startsWith('#'));
  const table = (end === -1 ? after : after.slice(0, end)).filter((l) => l.startsWith('|'));
  return table.slice(2).map((line) =>
    line
      .slice(1, -1)
      .split('|')
      .map((cell) => cell.trim()),
  );
}

const codes = Object.keys(DEAD_LETTER_CODES) as DeadLetterCode[];

describe('dead-letter codes', () => {
  it('are all in the docs table, in order, and the table has no other', () => {
    const documented = documentedRows().map(([code]) => code);
    expect(documented).toEqual(codes.map((code) => `\`${code}\``));
  });

  it('have the stage, retriability and meaning the docs give them', () => {
    const expected = codes.map((code) => {
      const { stage, retriable, meaning } = DEAD_LETTER_CODES[code];
      return [`\`${code}\``, `\`${stage}\``, retriable ? 'yes' : 'no', meaning];
    });
    expect(documentedRows()).toEqual(expected);
  });

  it('are named as they are written: upper case, with underscores', () => {
    for (const code of codes) expect(code).toMatch(/^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/);
    for (const { meaning } of Object.values(DEAD_LETTER_CODES)) expect(meaning).toMatch(/\.$/);
  });
});

describe('deadLetterCodeOf', () => {
  const classes: HugotError[] = [
    new ConfigError('x'),
    new ModelFolderError('x'),
    new InputError('x'),
    new UnknownPipelineError('x'),
    new ProviderUnavailableError('x'),
    new InferenceError('x'),
    new OverloadedError('x'),
    new DeadlineExceededError('x'),
    new CancelledError('x'),
    new WorkerCrashedError('x'),
    new OutputRejectedError('x'),
    new OutputInvalidError('x'),
  ];

  it("passes an error class's code on as it is, with the class's retriability", () => {
    for (const err of classes) {
      expect(deadLetterCodeOf(err)).toBe(err.code);
      expect(isDeadLetterCode(err.code) && DEAD_LETTER_CODES[err.code].retriable).toBe(
        err.retriable,
      );
    }
  });

  it('keeps the code of an error that crossed a worker-thread boundary', () => {
    for (const err of [...classes, new ImageRefusedError('IMAGE_INVALID', 'x', 'image')])
      expect(deadLetterCodeOf(deserializeError(serializeError(err)))).toBe(err.code);
  });

  it('gives the fallback for anything else', () => {
    expect(deadLetterCodeOf(new Error('a bug'))).toBe('INTERNAL');
    expect(deadLetterCodeOf(Object.assign(new Error('x'), { code: 'ENOENT' }))).toBe('INTERNAL');
    expect(deadLetterCodeOf('thrown text', 'RETRIES_EXHAUSTED')).toBe('RETRIES_EXHAUSTED');
    // A sink failure never becomes a dead letter; were one to reach here, it is not its code.
    expect(deadLetterCodeOf(new SinkError('x'))).toBe('INTERNAL');
    expect(isDeadLetterCode('SINK_FAILED')).toBe(false);
    expect(isDeadLetterCode('toString')).toBe(false);
  });
});
