// The prefix cache's blocks put side by side on the column axis, as an ONNX graph, so that a hit
// on a cache resident on a GPU is assembled there instead of on the host
// (src/pipelines/generation/prefix-blocks.ts). One Concat per cache tensor of a model, over
// `parts` blocks of it ([1, kv heads, block tokens, head dim] each). Blocks are cut from a
// sequence's cache by kv-rows-graph.ts's window graph.
import { DataType, encodeModel } from './onnx-model.ts';
import type { CacheType } from './kv-rows-graph.ts';

export const columnsInput = (part: number, i: number): string => `part_${part}_${i}`;
export const columnsOutput = (i: number): string => `columns_${i}`;

/** `parts` inputs per cache tensor, concatenated in order along axis 2 (the columns). */
export function columnsGraph(tensors: number, parts: number, type: CacheType): Uint8Array {
  const code = type === 'float32' ? DataType.float : DataType.float16;
  const each = Array.from({ length: tensors }, (_, i) => i);
  const names = (i: number): string[] =>
    Array.from({ length: parts }, (_, part) => columnsInput(part, i));
  // Heads and dims named per tensor, columns per part: a tensor's blocks differ only there.
  const shape = (i: number, t: string): string[] => ['b', `h${i}`, t, `d${i}`];
  return encodeModel({
    name: `kv-columns-${tensors}x${parts}-${type}`,
    inputs: each.flatMap((i) =>
      names(i).map((name, part) => ({ name, type: code, shape: shape(i, `t${part}_${i}`) })),
    ),
    outputs: each.map((i) => ({ name: columnsOutput(i), type: code, shape: shape(i, `t${i}`) })),
    constants: [],
    nodes: each.map((i) => ({
      op: 'Concat',
      inputs: names(i),
      outputs: [columnsOutput(i)],
      attributes: { axis: 2 },
    })),
  });
}
