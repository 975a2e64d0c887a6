// Small ONNX graphs written in TypeScript: the helpers that run beside a model on its own device
// (pooling an encoder's hidden states where they were computed, so only [batch, dim] crosses to
// the host). A model's own weights are never rewritten; a helper is a separate session fed the
// model's outputs through IO binding. The encoding is onnx.proto's ModelProto, by protobufjs over
// the subset of its messages a few nodes and constants need (field numbers as onnx.proto
// declares them).
import { lazyProtobufType } from '../../models/protobuf-type.ts';

// The messages the helpers use, made into protobufjs types on first use.
const SCHEMA = {
  nested: {
    ModelProto: {
      fields: {
        irVersion: { type: 'int64', id: 1 },
        producerName: { type: 'string', id: 2 },
        graph: { type: 'GraphProto', id: 7 },
        opsetImport: { rule: 'repeated', type: 'OperatorSetIdProto', id: 8 },
      },
    },
    OperatorSetIdProto: {
      fields: { domain: { type: 'string', id: 1 }, version: { type: 'int64', id: 2 } },
    },
    GraphProto: {
      fields: {
        node: { rule: 'repeated', type: 'NodeProto', id: 1 },
        name: { type: 'string', id: 2 },
        initializer: { rule: 'repeated', type: 'TensorProto', id: 5 },
        input: { rule: 'repeated', type: 'ValueInfoProto', id: 11 },
        output: { rule: 'repeated', type: 'ValueInfoProto', id: 12 },
      },
    },
    NodeProto: {
      fields: {
        input: { rule: 'repeated', type: 'string', id: 1 },
        output: { rule: 'repeated', type: 'string', id: 2 },
        name: { type: 'string', id: 3 },
        opType: { type: 'string', id: 4 },
        attribute: { rule: 'repeated', type: 'AttributeProto', id: 5 },
      },
    },
    AttributeProto: {
      fields: {
        name: { type: 'string', id: 1 },
        f: { type: 'float', id: 2 },
        i: { type: 'int64', id: 3 },
        ints: { rule: 'repeated', type: 'int64', id: 8, options: { packed: false } },
        type: { type: 'int32', id: 20 },
      },
    },
    TensorProto: {
      fields: {
        dims: { rule: 'repeated', type: 'int64', id: 1, options: { packed: false } },
        dataType: { type: 'int32', id: 2 },
        name: { type: 'string', id: 8 },
        rawData: { type: 'bytes', id: 9 },
      },
    },
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
const modelProto = lazyProtobufType(SCHEMA, 'ModelProto');

/** TensorProto.DataType values the helpers use. */
export const DataType = { float: 1, int64: 7, bool: 9, float16: 10 } as const;
export type DataTypeCode = (typeof DataType)[keyof typeof DataType];

/** AttributeProto.AttributeType values. */
const ATTRIBUTE_FLOAT = 1;
const ATTRIBUTE_INT = 2;
const ATTRIBUTE_INTS = 7;

/** IR version 8 goes with opset 17 (onnx/docs/Versioning.md), which ONNX Runtime 1.14+ runs. */
const IR_VERSION = 8;
export const OPSET = 17;

export type Attribute = number | readonly number[] | { float: number };

export interface GraphNode {
  op: string;
  inputs: readonly string[];
  outputs: readonly string[];
  attributes?: Readonly<Record<string, Attribute>>;
}

export interface GraphValue {
  name: string;
  type: DataTypeCode;
  /** A size, or a symbolic name the session resolves at each run. */
  shape: readonly (number | string)[];
}

export interface GraphConstant {
  name: string;
  type: typeof DataType.float | typeof DataType.int64;
  dims: readonly number[];
  values: readonly number[];
}

export interface GraphSpec {
  name: string;
  inputs: readonly GraphValue[];
  outputs: readonly GraphValue[];
  constants: readonly GraphConstant[];
  nodes: readonly GraphNode[];
}

/** The ModelProto bytes of `spec`, for CreateSessionFromArray or InferenceSession.create. */
export function encodeModel(spec: GraphSpec): Uint8Array {
  const message = modelProto().fromObject({
    irVersion: IR_VERSION,
    producerName: 'hugot-stream',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: spec.name,
      input: spec.inputs.map(valueInfo),
      output: spec.outputs.map(valueInfo),
      initializer: spec.constants.map(constant),
      node: spec.nodes.map((node, i) => ({
        name: `${node.op}_${i}`,
        opType: node.op,
        input: [...node.inputs],
        output: [...node.outputs],
        attribute: Object.entries(node.attributes ?? {}).map(([name, value]) =>
          attribute(name, value),
        ),
      })),
    },
  });
  return modelProto().encode(message).finish();
}

function valueInfo(value: GraphValue): object {
  return {
    name: value.name,
    type: {
      tensorType: {
        elemType: value.type,
        shape: {
          dim: value.shape.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

function constant(value: GraphConstant): object {
  const count = value.dims.reduce((x, y) => x * y, 1);
  if (count !== value.values.length)
    throw new RangeError(
      `constant ${value.name}: ${value.values.length} values for dims [${value.dims.join(', ')}]`,
    );
  const data =
    value.type === DataType.float
      ? new Float32Array(value.values)
      : BigInt64Array.from(value.values, (v) => BigInt(v));
  // ONNX stores raw_data little-endian, as every platform ONNX Runtime ships for is.
  return {
    name: value.name,
    dataType: value.type,
    dims: [...value.dims],
    rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
  };
}

function attribute(name: string, value: Attribute): object {
  if (typeof value === 'number') return { name, type: ATTRIBUTE_INT, i: value };
  if ('float' in value) return { name, type: ATTRIBUTE_FLOAT, f: value.float };
  return { name, type: ATTRIBUTE_INTS, ints: [...value] };
}
