// One Identity node: bound with its input on a device and its output in CPU memory, a run of it is
// ONNX Runtime's own copy of a resident value to the host (the C API has no plain device-to-host
// copy that works with every execution provider appended the classic way).
import { DataType, encodeModel, type DataTypeCode } from './onnx-model.ts';

export const COPY_INPUT = 'value';
export const COPY_OUTPUT = 'copy';

const TYPES: Partial<Record<string, DataTypeCode>> = {
  float32: DataType.float,
  float16: DataType.float16,
  int64: DataType.int64,
};

/** The copy graph for `type`, or undefined for a type it is not made for. */
export function copyGraph(type: string, rank: number): Uint8Array | undefined {
  const code = TYPES[type];
  if (code === undefined) return undefined;
  const shape = Array.from({ length: rank }, (_, i) => `d${i}`);
  return encodeModel({
    name: `copy-${type}-${rank}`,
    inputs: [{ name: COPY_INPUT, type: code, shape }],
    outputs: [{ name: COPY_OUTPUT, type: code, shape }],
    constants: [],
    nodes: [{ op: 'Identity', inputs: [COPY_INPUT], outputs: [COPY_OUTPUT] }],
  });
}
