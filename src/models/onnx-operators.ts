// The operators an ONNX graph's nodes name and its inputs' names, read without loading its weights:
// whether it is a quantized graph, and whether it takes a KV cache.
//
// Read when a session opens (on the thread that opens it, where the load blocks anyway) to pick a
// default that depends on the graph (runtime.memPattern). Only each node's op_type and each
// input's name are decoded, by hand: a thread that reads this never loads protobufjs.
import { readOnnxFile } from './onnx-wire.ts';

/** GraphProto.node, .input; NodeProto.op_type; ValueInfoProto.name (as onnx.proto numbers them). */
const GRAPH_NODE = 1;
const GRAPH_INPUT = 11;
const NODE_OP_TYPE = 4;
const VALUE_NAME = 1;

/**
 * Operators that run on integer kernels: ONNX Runtime's dynamic quantization (MatMulInteger with
 * DynamicQuantizeLinear, as Optimum's and onnxruntime's quantizers write it), the static QDQ and
 * QOperator formats, and the contrib ops its graph optimizer and 4-bit quantizers make.
 */
export const QUANTIZED_OPERATORS: ReadonlySet<string> = new Set([
  'MatMulInteger',
  'ConvInteger',
  'DynamicQuantizeLinear',
  'QuantizeLinear',
  'DequantizeLinear',
  'QLinearMatMul',
  'QLinearConv',
  'QGemm',
  'QAttention',
  'DynamicQuantizeMatMul',
  'MatMulIntegerToFloat',
  'MatMulNBits',
]);

export interface OnnxGraphFacts {
  /** The distinct op_type of the graph's nodes (not of subgraphs inside If or Loop attributes). */
  operators: Set<string>;
  inputs: string[];
}

export function readOnnxGraphFacts(onnxPath: string): OnnxGraphFacts {
  return readOnnxFile(onnxPath, (file) => {
    const facts: OnnxGraphFacts = { operators: new Set(), inputs: [] };
    file.eachField(file.graph(), (field, span) => {
      if (field === GRAPH_NODE) {
        const opType = file.findField(span, NODE_OP_TYPE);
        if (opType !== undefined) facts.operators.add(file.text(opType));
      } else if (field === GRAPH_INPUT) {
        const name = file.findField(span, VALUE_NAME);
        facts.inputs.push(name === undefined ? '' : file.text(name));
      }
    });
    return facts;
  });
}

export function isQuantized(facts: OnnxGraphFacts): boolean {
  for (const operator of facts.operators) if (QUANTIZED_OPERATORS.has(operator)) return true;
  return false;
}

/** A decoder step's graph: it is fed its past keys and values (`past_key_values.*`, `past.*`). */
export function takesKvCache(facts: OnnxGraphFacts): boolean {
  return facts.inputs.some((name) => name.startsWith('past'));
}
