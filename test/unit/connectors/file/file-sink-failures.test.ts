// A file sink that cannot write (a full disk): the file keeps whole lines only, and the file
// route stops with the first unwritten input line named, the run exiting 1 after its summary.
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SinkError } from '../../../../src/errors.ts';
import { FileSink, type LineFile } from '../../../../src/connectors/file/file-sink.ts';
import type { OutputRecord } from '../../../../src/route/record.ts';
import { scratchDir } from '../../../helpers/file-route.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..', '..');
const NODE = join(ROOT, 'node_modules', 'node', 'bin', 'node');
const dir = scratchDir('file-sink-failures');

const output = (text: string): OutputRecord => ({
  key: null,
  value: Buffer.from(text),
  headers: {},
  origin: { kind: 'file', path: 'in', line: 1 },
});

/** A file that takes `room` bytes, then fails with ENOSPC part-way through a write. */
function fullAfter(room: number): LineFile & { data: () => string; truncatedTo: number[] } {
  let data = Buffer.alloc(0);
  const truncatedTo: number[] = [];
  return {
    data: () => data.toString(),
    truncatedTo,
    write: ((buffer: Buffer, offset: number, length: number) => {
      const position = data.length;
      const fits = Math.max(Math.min(length, room - position), 0);
      if (fits === 0)
        return Promise.reject(
          Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }),
        );
      data = Buffer.concat([data.subarray(0, position), buffer.subarray(offset, offset + fits)]);
      return Promise.resolve({ bytesWritten: fits, buffer });
    }) as LineFile['write'],
    truncate: (length?: number) => {
      truncatedTo.push(length ?? 0);
      data = data.subarray(0, length ?? 0);
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  };
}

describe('file sink failures', () => {
  it('cuts a half-written line back to the last whole one and refuses every later write', async () => {
    const file = fullAfter(10);
    const sink = new FileSink('out.jsonl', false, { openFile: () => Promise.resolve(file) });
    await sink.write(output('{"a":1}')); // 8 bytes with its newline
    const failed = sink.write(output('{"b":2}')); // 2 bytes fit, then ENOSPC
    await expect(failed).rejects.toBeInstanceOf(SinkError);
    await expect(failed).rejects.toThrow(/ENOSPC.*last whole line \(1 lines, 8 bytes\)/);
    expect(file.truncatedTo).toEqual([8]);
    expect(file.data()).toBe('{"a":1}\n');
    await expect(sink.write(output('{"c":3}'))).rejects.toThrow(/ENOSPC/);
    expect(file.data()).toBe('{"a":1}\n');
  });

  it('a run whose output is a full disk (/dev/full) exits 1 after its summary, naming the first unwritten line', async () => {
    const input = dir.file('in.jsonl');
    await writeFile(input, ['{"text":"one"}', '', '{"text":"two"}', '{"text":"three"}'].join('\n'));
    const config = dir.file('full.yaml');
    await writeFile(
      config,
      `
models: { cls: { path: ${JSON.stringify(join(ROOT, 'test', 'fixtures', 'models', 'bert-text-classification'))} } }
pipelines: { classify: { task: textClassification, model: cls } }
routes:
  - source: { type: file, path: ${JSON.stringify(input)} }
    pipeline: classify
    sink: { type: file, path: /dev/full }
    dlq: { type: file, path: ${dir.quoted('dlq.jsonl')} }
telemetry: { enabled: false }
`,
    );
    const run = promisify(execFile)(NODE, ['src/cli/main.ts', 'run', '--config', config], {
      cwd: ROOT,
      env: { ...process.env, HUGOT_LOG_FORMAT: 'json' },
    });
    const failure = (await run.then(
      () => undefined,
      (err: unknown) => err,
    )) as { code?: number; stderr?: string } | undefined;
    expect(failure?.code).toBe(1);
    const lines = (failure?.stderr ?? '')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; summary?: { exitCode: number } });
    expect(
      lines.some((l) => /ENOSPC.*first unwritten record is .*in\.jsonl line 1\b/.test(l.msg)),
    ).toBe(true);
    expect(lines.find((l) => l.msg === 'summary')?.summary?.exitCode).toBe(1);
    // Nothing was dead-lettered for the sink's sake: the records are fine, only unwritten.
    expect((await readFile(dir.file('dlq.jsonl'), 'utf8')).trim()).toBe('');
  });
});
