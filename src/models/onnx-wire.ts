// An ONNX file walked in protobuf's wire format, straight from the disk: the readers of a graph's
// declared inputs, outputs and operators seek past everything they do not decode (above all the
// initializers, which hold the weights), so a read costs a few kilobytes whatever the model's size.
// Synchronous: the walks are short, and a thread opening a session blocks on the load anyway.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { ModelFolderError } from '../errors.ts';

/** ModelProto.graph (as onnx.proto numbers it). */
export const MODEL_GRAPH = 7;

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH = 2;
const WIRE_FIXED32 = 5;

const WINDOW = 64 * 1024;

export interface FieldSpan {
  start: number;
  end: number;
}

/**
 * Calls `read` with the open file and closes it after; a file that cannot be opened, or whose
 * walk fails, is a ModelFolderError naming it.
 */
export function readOnnxFile<T>(onnxPath: string, read: (file: WireFile) => T): T {
  let fd: number;
  try {
    fd = openSync(onnxPath, 'r');
  } catch (cause) {
    throw new ModelFolderError(`cannot open ${onnxPath}`, { cause, field: 'onnxFile' });
  }
  try {
    return read(new WireFile(fd, fstatSync(fd).size));
  } catch (cause) {
    if (cause instanceof ModelFolderError) throw cause;
    const why = cause instanceof Error ? cause.message : String(cause);
    throw new ModelFolderError(`${onnxPath} is not a readable ONNX model: ${why}`, {
      cause,
      field: 'onnxFile',
    });
  } finally {
    closeSync(fd);
  }
}

/** A file read through one window, so that walking many small fields costs few reads. */
export class WireFile {
  private readonly buffer = Buffer.allocUnsafe(WINDOW);
  private windowStart = 0;
  private windowEnd = 0;
  private readonly fd: number;
  readonly size: number;

  constructor(fd: number, size: number) {
    this.fd = fd;
    this.size = size;
  }

  /** The ModelProto's graph. */
  graph(): FieldSpan {
    const graph = this.findField({ start: 0, end: this.size }, MODEL_GRAPH);
    if (graph === undefined) throw new Error('it has no graph');
    return graph;
  }

  /** The first length-delimited field numbered `wanted` inside `message`. */
  findField(message: FieldSpan, wanted: number): FieldSpan | undefined {
    let found: FieldSpan | undefined;
    this.eachField(message, (field, span) => {
      if (found === undefined && field === wanted) found = span;
    });
    return found;
  }

  /** Calls `visit` with every length-delimited field of `message`; skips the others' values. */
  eachField(message: FieldSpan, visit: (field: number, span: FieldSpan) => void): void {
    let at = message.start;
    while (at < message.end) {
      const tag = this.varint(at);
      at = tag.next;
      const field = Math.floor(tag.value / 8);
      const wire = tag.value % 8;
      if (wire === WIRE_VARINT) at = this.varint(at).next;
      else if (wire === WIRE_FIXED64) at += 8;
      else if (wire === WIRE_FIXED32) at += 4;
      else if (wire === WIRE_LENGTH) {
        const length = this.varint(at);
        const end = length.next + length.value;
        if (end > message.end) throw new Error(`field ${field} runs past its message`);
        visit(field, { start: length.next, end });
        at = end;
      } else throw new Error(`unsupported wire type ${wire} at byte ${at}`);
    }
  }

  /** A field's bytes (a view of the window when they fit in it: valid until the next read). */
  bytes({ start, end }: FieldSpan): Uint8Array {
    if (end - start > WINDOW) {
      const out = Buffer.allocUnsafe(end - start);
      readSync(this.fd, out, 0, out.length, start);
      return out;
    }
    this.load(start, end - start);
    return this.buffer.subarray(start - this.windowStart, end - this.windowStart);
  }

  text(span: FieldSpan): string {
    const bytes = this.bytes(span);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  }

  private varint(at: number): { value: number; next: number } {
    this.load(at, Math.min(10, this.size - at));
    let value = 0;
    let scale = 1;
    for (let i = at; i < at + 10 && i < this.windowEnd; i += 1) {
      const byte = this.buffer[i - this.windowStart] as number;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return { value, next: i + 1 };
      scale *= 128;
    }
    throw new Error(`truncated varint at byte ${at}`);
  }

  private load(at: number, length: number): void {
    if (at >= this.windowStart && at + length <= this.windowEnd) return;
    const bytesRead = readSync(this.fd, this.buffer, 0, WINDOW, at);
    this.windowStart = at;
    this.windowEnd = at + bytesRead;
    if (bytesRead < length) throw new Error(`the file ends at byte ${this.windowEnd}`);
  }
}
