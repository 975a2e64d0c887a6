// The decode batch's row moves as ONNX graphs, so that a cache resident on a GPU is re-assembled
// there instead of round-tripping through the host (src/generative/resident-rows.ts). Two graphs
// over every cache tensor of a model at once ([batch, kv heads, columns, head dim] each):
//   window: rows of one state (Gather on the batch axis), its last columns (Slice) and zero
//           columns on the left (Pad): one source's part of a left-padded batch;
//   join:   the sources' windows concatenated on the batch axis and put in the batch's row order
//           (Gather), the new batch.
import type { ResidentFeeds, ResidentTensor } from '../session.ts';
import { Tensor } from '../tensor.ts';
import { DataType, encodeModel, type GraphNode, type GraphValue } from './onnx-model.ts';

export type CacheType = 'float32' | 'float16';

export const WINDOW_INPUTS = { rows: 'rows', start: 'start', end: 'end', pads: 'pads' } as const;
export const JOIN_ORDER = 'order';

const cacheShape = (tag: string): string[] => [`b${tag}`, `h${tag}`, `t${tag}`, `d${tag}`];
const code = (type: CacheType): typeof DataType.float | typeof DataType.float16 =>
  type === 'float32' ? DataType.float : DataType.float16;

export const windowInput = (i: number): string => `cache_${i}`;
export const windowOutput = (i: number): string => `window_${i}`;
export const joinInput = (source: number, i: number): string => `source_${source}_${i}`;
export const joinOutput = (i: number): string => `joined_${i}`;

/** Rows `rows` of `tensors` cache tensors, columns [start, end), `pads` ([8], ONNX Pad's) added. */
export function windowGraph(tensors: number, type: CacheType): Uint8Array {
  const nodes: GraphNode[] = [];
  const inputs: GraphValue[] = [];
  const outputs: GraphValue[] = [];
  for (let i = 0; i < tensors; i += 1) {
    // Dimensions named per tensor: a cohort's self- and cross-attention caches differ in length.
    inputs.push({ name: windowInput(i), type: code(type), shape: cacheShape(`${i}`) });
    outputs.push({ name: windowOutput(i), type: code(type), shape: cacheShape(`${i}_out`) });
    nodes.push(
      {
        op: 'Gather',
        inputs: [windowInput(i), WINDOW_INPUTS.rows],
        outputs: [`rows_${i}`],
        attributes: { axis: 0 },
      },
      {
        op: 'Slice',
        inputs: [`rows_${i}`, WINDOW_INPUTS.start, WINDOW_INPUTS.end, 'column_axis'],
        outputs: [`columns_${i}`],
      },
      // Pad's default constant is zero, of the tensor's own type.
      { op: 'Pad', inputs: [`columns_${i}`, WINDOW_INPUTS.pads], outputs: [windowOutput(i)] },
    );
  }
  inputs.push(
    { name: WINDOW_INPUTS.rows, type: DataType.int64, shape: ['k'] },
    { name: WINDOW_INPUTS.start, type: DataType.int64, shape: [1] },
    { name: WINDOW_INPUTS.end, type: DataType.int64, shape: [1] },
    { name: WINDOW_INPUTS.pads, type: DataType.int64, shape: [8] },
  );
  return encodeModel({
    name: `kv-window-${tensors}-${type}`,
    inputs,
    outputs,
    constants: [{ name: 'column_axis', type: DataType.int64, dims: [1], values: [2] }],
    nodes,
  });
}

export const int64Tensor = (values: readonly number[]): Tensor =>
  new Tensor('int64', BigInt64Array.from(values, BigInt), [values.length]);

/** The window graph's feeds: `caches`' rows `rows`, columns [start, end), `leftPad` zero columns. */
export function windowFeeds(
  caches: readonly (Tensor | ResidentTensor)[],
  rows: readonly number[],
  start: number,
  end: number,
  leftPad: number,
): ResidentFeeds {
  const feeds: ResidentFeeds = {
    [WINDOW_INPUTS.rows]: int64Tensor(rows),
    [WINDOW_INPUTS.start]: int64Tensor([start]),
    [WINDOW_INPUTS.end]: int64Tensor([end]),
    // ONNX Pad's pads: every axis' begin, then every axis' end; only columns get any.
    [WINDOW_INPUTS.pads]: int64Tensor([0, 0, leftPad, 0, 0, 0, 0, 0]),
  };
  caches.forEach((t, i) => (feeds[windowInput(i)] = t));
  return feeds;
}

/** `sources` windows of `tensors` cache tensors each, concatenated, rows taken in `order`. */
export function joinGraph(tensors: number, sources: number, type: CacheType): Uint8Array {
  const nodes: GraphNode[] = [];
  const inputs: GraphValue[] = [];
  const outputs: GraphValue[] = [];
  for (let i = 0; i < tensors; i += 1) {
    const parts = Array.from({ length: sources }, (_, s) => joinInput(s, i));
    for (const [s, name] of parts.entries())
      inputs.push({ name, type: code(type), shape: [`b${s}`, 'h', 't', 'd'] });
    outputs.push({ name: joinOutput(i), type: code(type), shape: ['k', 'h', 't', 'd'] });
    nodes.push(
      { op: 'Concat', inputs: parts, outputs: [`all_${i}`], attributes: { axis: 0 } },
      {
        op: 'Gather',
        inputs: [`all_${i}`, JOIN_ORDER],
        outputs: [joinOutput(i)],
        attributes: { axis: 0 },
      },
    );
  }
  inputs.push({ name: JOIN_ORDER, type: DataType.int64, shape: ['k'] });
  return encodeModel({
    name: `kv-join-${tensors}x${sources}-${type}`,
    inputs,
    outputs,
    constants: [],
    nodes,
  });
}
