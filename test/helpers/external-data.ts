// Moves an ONNX model's weights into an external data file, as onnx's
// save_model(..., save_as_external_data=True) does for a model over 2 GB: each initializer's
// raw_data leaves the graph and the tensor names the file, offset and length instead. Done on
// the protobuf wire format with protobufjs, so a test makes this layout from any committed
// fixture without Python and without a second copy of the fixture in the repository.
import protobuf from 'protobufjs';

const MODEL_GRAPH = 7;
const GRAPH_INITIALIZER = 5;
const TENSOR_RAW_DATA = 9;
const TENSOR_EXTERNAL_DATA = 13;
const TENSOR_DATA_LOCATION = 14;
const EXTERNAL = 1;
const LENGTH_DELIMITED = 2;
/** Offsets aligned as onnx aligns them, so ONNX Runtime may map the file. */
const ALIGN = 4096;

interface Field {
  number: number;
  wire: number;
  /** The whole field as written (tag included), or, for length-delimited fields, the value. */
  bytes: Uint8Array;
}

function fieldsOf(message: Uint8Array): Field[] {
  const reader = protobuf.Reader.create(message);
  const fields: Field[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const number = tag >>> 3;
    const wire = tag & 7;
    if (wire === LENGTH_DELIMITED) {
      fields.push({ number, wire, bytes: reader.bytes() });
    } else {
      reader.skipType(wire);
      fields.push({ number, wire, bytes: message.subarray(start, reader.pos) });
    }
  }
  return fields;
}

function entry(key: string, value: string): Uint8Array {
  return protobuf.Writer.create().uint32(10).string(key).uint32(18).string(value).finish();
}

/** The model with its weights moved out, and the data file's bytes (to write beside it as `location`). */
export function splitExternalData(
  model: Uint8Array,
  location: string,
): { model: Uint8Array; data: Uint8Array; moved: number } {
  const chunks: Uint8Array[] = [];
  let offset = 0;
  let moved = 0;
  const tensor = (bytes: Uint8Array): Uint8Array => {
    const fields = fieldsOf(bytes);
    const raw = fields.find((f) => f.number === TENSOR_RAW_DATA);
    if (raw === undefined || raw.bytes.length === 0) return bytes;
    const padding = (ALIGN - (offset % ALIGN)) % ALIGN;
    chunks.push(new Uint8Array(padding), raw.bytes);
    offset += padding;
    const kept = fields.filter((f) => f.number !== TENSOR_RAW_DATA);
    const out = [
      ...kept,
      ...[
        entry('location', location),
        entry('offset', String(offset)),
        entry('length', String(raw.bytes.length)),
      ].map((b) => ({ number: TENSOR_EXTERNAL_DATA, wire: LENGTH_DELIMITED, bytes: b })),
    ];
    offset += raw.bytes.length;
    moved += 1;
    const external = protobuf.Writer.create()
      .uint32(TENSOR_DATA_LOCATION << 3)
      .int32(EXTERNAL)
      .finish();
    return concat([encodeMixed(out), external]);
  };
  const graph = (bytes: Uint8Array): Uint8Array =>
    encodeMixed(
      fieldsOf(bytes).map((f) =>
        f.number === GRAPH_INITIALIZER ? { ...f, bytes: tensor(f.bytes) } : f,
      ),
    );
  const top = fieldsOf(model).map((f) =>
    f.number === MODEL_GRAPH ? { ...f, bytes: graph(f.bytes) } : f,
  );
  return { model: encodeMixed(top), data: concat(chunks), moved };
}

/** Length-delimited fields re-framed; every other field copied as it was written. */
function encodeMixed(fields: readonly Field[]): Uint8Array {
  return concat(
    fields.map((field) =>
      field.wire === LENGTH_DELIMITED
        ? protobuf.Writer.create()
            .uint32((field.number << 3) | 2)
            .bytes(field.bytes)
            .finish()
        : field.bytes,
    ),
  );
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
