// Sentence-embedding pooling as an ONNX graph, run where the encoder ran. Fed the encoder's
// `[batch, tokens, hidden]` output (through IO binding, without copying it to the host) and the
// attention mask, it returns `[batch, hidden]`: the same numbers featureExtraction's JS pooling
// gives (math.ts), but summed in float32 by ONNX Runtime's kernels rather than in float64, so
// they agree to a tolerance rather than bit for bit (test/unit/runtime/pooling-graph.test.ts).
import {
  DataType,
  encodeModel,
  type GraphConstant,
  type GraphNode,
  type DataTypeCode,
} from './onnx-model.ts';

export type GraphPooling = 'mean' | 'cls' | 'max';

export interface PoolingGraphSpec {
  pooling: GraphPooling;
  normalize: boolean;
  /** The encoder output's element type: fp16 exports are cast to float before pooling. */
  hiddenType: 'float32' | 'float16';
}

export const POOLING_INPUTS = { hidden: 'hidden_states', mask: 'attention_mask' } as const;
export const POOLING_OUTPUT = 'embeddings';

/** A stable name per spec: the session cache and the shared-session table key on it. */
export function poolingGraphName(spec: PoolingGraphSpec): string {
  return `pooling-${spec.pooling}${spec.normalize ? '-normalized' : ''}-${spec.hiddenType}`;
}

export function poolingGraph(spec: PoolingGraphSpec): Uint8Array {
  const nodes: GraphNode[] = [];
  const hidden = spec.hiddenType === 'float16' ? 'hidden_float' : POOLING_INPUTS.hidden;
  if (spec.hiddenType === 'float16')
    nodes.push({
      op: 'Cast',
      inputs: [POOLING_INPUTS.hidden],
      outputs: [hidden],
      attributes: { to: DataType.float },
    });
  const pooled = spec.normalize ? 'pooled' : POOLING_OUTPUT;
  nodes.push(...POOLERS[spec.pooling](hidden, pooled));
  if (spec.normalize) {
    // torch.nn.functional.normalize: x / max(||x||, 1e-12).
    nodes.push(
      { op: 'ReduceL2', inputs: [pooled], outputs: ['norm'], attributes: { axes: [1] } },
      { op: 'Max', inputs: ['norm', 'norm_floor'], outputs: ['norm_clamped'] },
      { op: 'Div', inputs: [pooled, 'norm_clamped'], outputs: [POOLING_OUTPUT] },
    );
  }
  const hiddenType: DataTypeCode =
    spec.hiddenType === 'float16' ? DataType.float16 : DataType.float;
  return encodeModel({
    name: poolingGraphName(spec),
    inputs: [
      { name: POOLING_INPUTS.hidden, type: hiddenType, shape: ['batch', 'tokens', 'hidden'] },
      { name: POOLING_INPUTS.mask, type: DataType.int64, shape: ['batch', 'tokens'] },
    ],
    outputs: [{ name: POOLING_OUTPUT, type: DataType.float, shape: ['batch', 'hidden'] }],
    // ONNX Runtime warns of initializers no node reads, so only the used ones go in.
    constants: CONSTANTS.filter((c) => nodes.some((n) => n.inputs.includes(c.name))),
    nodes,
  });
}

const CONSTANTS: GraphConstant[] = [
  { name: 'axis_tokens', type: DataType.int64, dims: [1], values: [1] },
  { name: 'axis_last', type: DataType.int64, dims: [1], values: [2] },
  { name: 'first_token', type: DataType.int64, dims: [], values: [0] },
  // sentence-transformers clamps the token count at 1e-9, and so does maskedMean.
  { name: 'count_floor', type: DataType.float, dims: [], values: [1e-9] },
  { name: 'norm_floor', type: DataType.float, dims: [], values: [1e-12] },
  { name: 'minus_infinity', type: DataType.float, dims: [], values: [-Infinity] },
  { name: 'zero', type: DataType.float, dims: [], values: [0] },
];

const POOLERS: Record<GraphPooling, (hidden: string, out: string) => GraphNode[]> = {
  mean: (hidden, out) => [
    { op: 'Cast', inputs: [POOLING_INPUTS.mask], outputs: ['mask_float'], attributes: { to: 1 } },
    { op: 'Unsqueeze', inputs: ['mask_float', 'axis_last'], outputs: ['mask_column'] },
    { op: 'Mul', inputs: [hidden, 'mask_column'], outputs: ['masked'] },
    {
      op: 'ReduceSum',
      inputs: ['masked', 'axis_tokens'],
      outputs: ['sum'],
      attributes: { keepdims: 0 },
    },
    { op: 'ReduceSum', inputs: ['mask_float', 'axis_tokens'], outputs: ['count'] },
    { op: 'Max', inputs: ['count', 'count_floor'], outputs: ['count_clamped'] },
    { op: 'Div', inputs: ['sum', 'count_clamped'], outputs: [out] },
  ],
  cls: (hidden, out) => [
    { op: 'Gather', inputs: [hidden, 'first_token'], outputs: [out], attributes: { axis: 1 } },
  ],
  // The largest attended value per dimension; a row with no attended token gives zeros.
  max: (hidden, out) => [
    { op: 'Cast', inputs: [POOLING_INPUTS.mask], outputs: ['mask_bool'], attributes: { to: 9 } },
    { op: 'Unsqueeze', inputs: ['mask_bool', 'axis_last'], outputs: ['mask_column'] },
    { op: 'Where', inputs: ['mask_column', hidden, 'minus_infinity'], outputs: ['masked'] },
    {
      op: 'ReduceMax',
      inputs: ['masked'],
      outputs: ['largest'],
      attributes: { axes: [1], keepdims: 0 },
    },
    { op: 'IsInf', inputs: ['largest'], outputs: ['empty'] },
    { op: 'Where', inputs: ['empty', 'zero', 'largest'], outputs: [out] },
  ],
};
