// Whether a model gives each row the same result whatever rows share its batch.
//
// Dynamic quantization (onnxruntime's quantize_dynamic) picks one activation scale per tensor at run
// time, over every row and padding position of the batch, so a record's embedding moves with its
// batch mates. Such models are run one record per session call (see row-by-row.ts); every other
// model runs its batch in one call.
import { createReadStream } from 'node:fs';

/** Operator types whose activation scale is computed from the whole input tensor at run time. */
const BATCH_SCALED_OPS = ['DynamicQuantizeLinear', 'DynamicQuantizeMatMul', 'DynamicQuantizeLSTM'];

/**
 * Scans the ONNX file's bytes for the operator names above. A graph stores each node's op_type as a
 * plain string, so no protobuf parsing is needed; weights in external data files are not read.
 */
export async function isBatchInvariant(onnxPath: string): Promise<boolean> {
  const markers = BATCH_SCALED_OPS.map((op) => Buffer.from(op, 'latin1'));
  const keep = Math.max(...markers.map((m) => m.length)) - 1;
  let tail = Buffer.alloc(0);
  for await (const chunk of createReadStream(onnxPath, { highWaterMark: 1 << 20 })) {
    const window = Buffer.concat([tail, chunk as Buffer]);
    if (markers.some((marker) => window.includes(marker))) return false;
    tail = window.subarray(Math.max(0, window.length - keep));
  }
  return true;
}
