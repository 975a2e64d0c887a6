// The inputs and outputs an ONNX file declares, read without loading its weights.
//
// A session would tell us the same (inputNames, outputNames), but creating one reads and
// prepares every weight: validate-config would then cost what a start does. The graph's
// declared inputs and outputs are two short fields of the ModelProto, so this walks the
// protobuf wire format from the file, seeking past everything else (the initializers, which
// hold the weights, come before them), and decodes only those fields with protobufjs. It reads
// a few kilobytes whatever the model's size; external data files are never opened.
import { open, type FileHandle } from 'node:fs/promises';
import { lazyProtobufType } from './protobuf-type.ts';
import { ModelFolderError } from '../errors.ts';

export interface OnnxValue {
  name: string;
  /** ONNX TensorProto.DataType (1 float, 7 int64, 10 float16, ...); 0 when not a tensor. */
  elementType: number;
  /** Each dimension's size, or its symbolic name (`batch_size`), or undefined when unnamed. */
  shape: readonly (number | string | undefined)[] | undefined;
}

export interface OnnxSignature {
  inputs: OnnxValue[];
  outputs: OnnxValue[];
}

// The subset of onnx.proto these fields need (field numbers as onnx.proto declares them).
const SCHEMA = {
  nested: {
    ValueInfoProto: {
      fields: { name: { type: 'string', id: 1 }, type: { type: 'TypeProto', id: 2 } },
    },
    TypeProto: { fields: { tensorType: { type: 'TensorType', id: 1 } } },
    TensorType: {
      fields: { elemType: { type: 'int32', id: 1 }, shape: { type: 'TensorShapeProto', id: 2 } },
    },
    TensorShapeProto: { fields: { dim: { rule: 'repeated', type: 'Dimension', id: 1 } } },
    Dimension: {
      fields: { dimValue: { type: 'int64', id: 1 }, dimParam: { type: 'string', id: 2 } },
    },
  },
};
const valueInfo = lazyProtobufType(SCHEMA, 'ValueInfoProto');

/** ModelProto.graph, and GraphProto.input / .output. */
const MODEL_GRAPH = 7;
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH = 2;
const WIRE_FIXED32 = 5;

const WINDOW = 64 * 1024;

interface DecodedValue {
  name?: string;
  type?: {
    tensorType?: {
      elemType?: number;
      shape?: { dim?: { dimValue?: number | { toNumber(): number }; dimParam?: string }[] };
    };
  };
}

export async function readOnnxSignature(onnxPath: string): Promise<OnnxSignature> {
  const file = await open(onnxPath, 'r').catch((cause: unknown) => {
    throw new ModelFolderError(`cannot open ${onnxPath}`, { cause, field: 'onnxFile' });
  });
  try {
    const { size } = await file.stat();
    const cursor = new FileCursor(file, size);
    const graph = await findField(cursor, 0, size, MODEL_GRAPH);
    if (graph === undefined) throw notOnnx(onnxPath, 'it has no graph');
    const signature: OnnxSignature = { inputs: [], outputs: [] };
    await eachField(cursor, graph.start, graph.end, async (field, start, end) => {
      if (field !== GRAPH_INPUT && field !== GRAPH_OUTPUT) return;
      const value = toValue(valueInfo().decode(await cursor.bytes(start, end)) as DecodedValue);
      (field === GRAPH_INPUT ? signature.inputs : signature.outputs).push(value);
    });
    return signature;
  } catch (cause) {
    if (cause instanceof ModelFolderError) throw cause;
    throw notOnnx(onnxPath, cause instanceof Error ? cause.message : String(cause), cause);
  } finally {
    await file.close();
  }
}

function notOnnx(path: string, why: string, cause?: unknown): ModelFolderError {
  return new ModelFolderError(`${path} is not a readable ONNX model: ${why}`, {
    cause,
    field: 'onnxFile',
  });
}

function toValue(decoded: DecodedValue): OnnxValue {
  const tensor = decoded.type?.tensorType;
  const dims = tensor?.shape?.dim;
  return {
    name: decoded.name ?? '',
    elementType: tensor?.elemType ?? 0,
    // Unset fields read as their defaults from the decoded message's prototype, so a dimension
    // is fixed only where the file wrote its value.
    shape: dims?.map((d) =>
      Object.hasOwn(d, 'dimValue') && d.dimValue !== undefined
        ? typeof d.dimValue === 'number'
          ? d.dimValue
          : d.dimValue.toNumber()
        : Object.hasOwn(d, 'dimParam') && d.dimParam !== ''
          ? d.dimParam
          : undefined,
    ),
  };
}

/** The first length-delimited field numbered `wanted` between start and end. */
async function findField(
  cursor: FileCursor,
  start: number,
  end: number,
  wanted: number,
): Promise<{ start: number; end: number } | undefined> {
  let found: { start: number; end: number } | undefined;
  await eachField(cursor, start, end, (field, s, e) => {
    if (found === undefined && field === wanted) found = { start: s, end: e };
    return Promise.resolve();
  });
  return found;
}

/** Calls `visit` with every length-delimited field of the message; skips the others' values. */
async function eachField(
  cursor: FileCursor,
  start: number,
  end: number,
  visit: (field: number, start: number, end: number) => Promise<void>,
): Promise<void> {
  let at = start;
  while (at < end) {
    const tag = await cursor.varint(at);
    at = tag.next;
    const field = Math.floor(tag.value / 8);
    const wire = tag.value % 8;
    if (wire === WIRE_VARINT) at = (await cursor.varint(at)).next;
    else if (wire === WIRE_FIXED64) at += 8;
    else if (wire === WIRE_FIXED32) at += 4;
    else if (wire === WIRE_LENGTH) {
      const length = await cursor.varint(at);
      const valueEnd = length.next + length.value;
      if (valueEnd > end) throw new Error(`field ${field} runs past its message`);
      await visit(field, length.next, valueEnd);
      at = valueEnd;
    } else throw new Error(`unsupported wire type ${wire} at byte ${at}`);
  }
}

/** Reads a file through one window, so walking many small fields costs few reads. */
class FileCursor {
  private readonly buffer = Buffer.allocUnsafe(WINDOW);
  private windowStart = 0;
  private windowEnd = 0;
  private readonly file: FileHandle;
  private readonly size: number;

  constructor(file: FileHandle, size: number) {
    this.file = file;
    this.size = size;
  }

  async varint(at: number): Promise<{ value: number; next: number }> {
    await this.load(at, Math.min(10, this.size - at));
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

  async bytes(start: number, end: number): Promise<Uint8Array> {
    if (end - start > WINDOW) {
      const out = Buffer.allocUnsafe(end - start);
      await this.file.read(out, 0, out.length, start);
      return out;
    }
    await this.load(start, end - start);
    return this.buffer.subarray(start - this.windowStart, end - this.windowStart);
  }

  private async load(at: number, length: number): Promise<void> {
    if (at >= this.windowStart && at + length <= this.windowEnd) return;
    const { bytesRead } = await this.file.read(this.buffer, 0, WINDOW, at);
    this.windowStart = at;
    this.windowEnd = at + bytesRead;
    if (bytesRead < length) throw new Error(`the file ends at byte ${this.windowEnd}`);
  }
}
