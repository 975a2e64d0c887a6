// JSONL to a file or standard output. Outputs are written as their JSON value; dead letters
// (which must keep bytes that may not be JSON or UTF-8) as {key, value, valueBase64?, headers}.
import { once } from 'node:events';
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import { dirname } from 'node:path';
import { envelopeHeaders } from '../../route/headers.ts';
import type { OutputRecord } from '../../route/record.ts';
import type { Sink } from '../../route/sink.ts';

export class FileSink implements Sink {
  private readonly stream: NodeJS.WritableStream;
  private readonly ownsStream: boolean;
  private readonly envelope: boolean;

  /** `envelope` keeps headers and the raw bytes (dead letters); otherwise the value is written as it is. */
  constructor(path: string, envelope: boolean) {
    this.envelope = envelope;
    if (path === '-') {
      this.stream = process.stdout;
      this.ownsStream = false;
    } else {
      mkdirSync(dirname(path), { recursive: true });
      this.stream = createWriteStream(path, { flags: 'w' });
      this.ownsStream = true;
    }
  }

  async write(record: OutputRecord): Promise<void> {
    const line = this.envelope ? JSON.stringify(envelopeOf(record)) : record.value.toString('utf8');
    if (!this.stream.write(`${line}\n`)) await once(this.stream, 'drain');
  }

  async close(): Promise<void> {
    if (!this.ownsStream) return;
    const stream = this.stream as WriteStream;
    await new Promise<void>((resolve, reject) =>
      stream.end((err?: Error | null) => (err ? reject(err) : resolve())),
    );
  }
}

function envelopeOf(record: OutputRecord): Record<string, unknown> {
  const text = record.value.toString('utf8');
  const exact = Buffer.from(text, 'utf8').equals(record.value);
  return {
    key: record.key?.toString('utf8') ?? null,
    ...(exact ? { value: text } : { valueBase64: record.value.toString('base64') }),
    ...envelopeHeaders(record.headers),
  };
}
