// JSONL to a file or standard output. Outputs are written as their JSON value; dead letters
// (which must keep bytes that may not be JSON or UTF-8) as {key, value, valueBase64?, headers}.
//
// A file is written a whole line at a time with the length of its whole lines counted, so that a
// write that fails (a full disk, a quota, an I/O error) is cut back to the last whole line: a reader never sees half a
// record, and the input position of the first unwritten record is where a rerun starts. After
// a failure every write refuses at once with the same SinkError: the file route stops there.
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { SinkError } from '../../errors.ts';
import { envelopeHeaders } from '../../route/headers.ts';
import type { OutputRecord } from '../../route/record.ts';
import type { Sink } from '../../route/sink.ts';

/** The part of a FileHandle the sink uses (tests pass one that fails). */
export type LineFile = Pick<FileHandle, 'write' | 'truncate' | 'close'>;

export interface FileSinkOptions {
  /** Opens the file for writing, truncating it (default: fs.promises.open(path, 'w')). */
  openFile?: (path: string) => Promise<LineFile>;
}

export class FileSink implements Sink {
  private readonly path: string;
  private readonly envelope: boolean;
  private readonly openFile: (path: string) => Promise<LineFile>;
  private file: Promise<LineFile> | undefined;
  /** Bytes of whole lines written: where the file is cut back to after a failed write. */
  private offset = 0;
  private lines = 0;
  private failure: SinkError | undefined;

  /** `envelope` keeps headers and the raw bytes (dead letters); otherwise the value is written as it is. */
  constructor(path: string, envelope: boolean, options: FileSinkOptions = {}) {
    this.path = path;
    this.envelope = envelope;
    this.openFile =
      options.openFile ??
      ((p) => {
        mkdirSync(dirname(p), { recursive: true });
        return open(p, 'w');
      });
    // Opened (and emptied) at start, as any run's output: a run that writes nothing leaves an
    // empty file, not the last run's. A failure to open is the first write's to report.
    if (path !== '-') {
      this.file = this.openFile(path);
      this.file.catch(() => undefined);
    }
  }

  async write(record: OutputRecord): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    const line = this.envelope ? JSON.stringify(envelopeOf(record)) : record.value.toString('utf8');
    const bytes = Buffer.from(`${line}\n`, 'utf8');
    if (this.path === '-') {
      if (!process.stdout.write(bytes)) await once(process.stdout, 'drain');
      return;
    }
    const file = await (this.file as Promise<LineFile>).catch((err: unknown) => {
      throw this.fail(err, 'cannot open');
    });
    let done = 0;
    try {
      while (done < bytes.length) {
        // At the current position (null), not at an offset: pipes and devices take no pwrite.
        const { bytesWritten } = await file.write(bytes, done, bytes.length - done, null);
        done += bytesWritten;
      }
    } catch (err) {
      // Half a line on disk would be a torn record for every reader: cut back to the last whole one.
      if (done > 0) await file.truncate(this.offset).catch(() => undefined);
      throw this.fail(err, 'cannot write to');
    }
    this.offset += bytes.length;
    this.lines += 1;
  }

  async close(): Promise<void> {
    const file = await this.file?.catch(() => undefined);
    await file?.close();
  }

  private fail(err: unknown, what: string): SinkError {
    const reason = err instanceof Error ? err.message : String(err);
    this.failure = new SinkError(
      `${what} ${this.path}: ${reason}; it ends with the last whole line (${this.lines} lines, ${this.offset} bytes)`,
      { cause: err },
    );
    return this.failure;
  }
}

function envelopeOf(record: OutputRecord): Record<string, unknown> {
  const key = record.key?.toString('utf8') ?? null;
  if (record.tombstone === true) return { key, value: null, ...envelopeHeaders(record.headers) };
  const text = record.value.toString('utf8');
  const exact = Buffer.from(text, 'utf8').equals(record.value);
  return {
    key,
    ...(exact ? { value: text } : { valueBase64: record.value.toString('base64') }),
    ...envelopeHeaders(record.headers),
  };
}
