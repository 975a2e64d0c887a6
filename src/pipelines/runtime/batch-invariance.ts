// Whether a model gives each row the same result whatever rows share its batch.
//
// Dynamic quantization (onnxruntime's quantize_dynamic) picks one activation scale per tensor at run
// time, over every row and padding position of the batch, so a record's embedding moves with its
// batch mates. Such models are run one record per session call (see ../row-by-row.ts); every other
// model runs its batch in one call.
import { open } from 'node:fs/promises';

/** Operator types whose activation scale is computed from the whole input tensor at run time. */
const BATCH_SCALED_OPS = ['DynamicQuantizeLinear', 'DynamicQuantizeMatMul', 'DynamicQuantizeLSTM'];
const CHUNK_BYTES = 1 << 20;

/**
 * Scans the ONNX file's bytes for the operator names above. A graph stores each node's op_type as a
 * plain string, so no protobuf parsing is needed; weights in external data files are not read.
 * One buffer is reused for the whole file: the scan runs beside the session's load, whose peak
 * is the shard's, and a fresh buffer per chunk left the whole file as garbage on the heap.
 */
export async function isBatchInvariant(onnxPath: string): Promise<boolean> {
  const markers = BATCH_SCALED_OPS.map((op) => Buffer.from(op, 'latin1'));
  const keep = Math.max(...markers.map((m) => m.length)) - 1;
  const buffer = Buffer.allocUnsafe(keep + CHUNK_BYTES);
  const file = await open(onnxPath, 'r');
  try {
    let carried = 0;
    for (;;) {
      const { bytesRead } = await file.read(buffer, carried, CHUNK_BYTES);
      if (bytesRead === 0) return true;
      const window = buffer.subarray(0, carried + bytesRead);
      if (markers.some((marker) => window.includes(marker))) return false;
      carried = Math.min(keep, window.length);
      window.copyWithin(0, window.length - carried);
    }
  } finally {
    await file.close();
  }
}
