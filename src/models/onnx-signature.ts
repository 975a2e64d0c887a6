// The inputs and outputs an ONNX file declares, read without loading its weights.
//
// A session would tell us the same (inputNames, outputNames), but creating one reads and
// prepares every weight: validate-config would then cost what a start does. The graph's
// declared inputs and outputs are short fields of the GraphProto, so this walks the file
// (src/models/onnx-wire.ts) and decodes only those fields with protobufjs. It reads a few
// kilobytes whatever the model's size; external data files are never opened.
import { readOnnxFile } from './onnx-wire.ts';
import { lazyProtobufType } from './protobuf-type.ts';

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

/** GraphProto.input / .output. */
const GRAPH_INPUT = 11;
const GRAPH_OUTPUT = 12;



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
  return Promise.resolve(
    readOnnxFile(onnxPath, (file) => {
      const signature: OnnxSignature = { inputs: [], outputs: [] };
      file.eachField(file.graph(), (field, span) => {
        if (field !== GRAPH_INPUT && field !== GRAPH_OUTPUT) return;
        const value = toValue(valueInfo().decode(file.bytes(span)) as DecodedValue);
        (field === GRAPH_INPUT ? signature.inputs : signature.outputs).push(value);
      });
      return signature;
    }),
  );
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
